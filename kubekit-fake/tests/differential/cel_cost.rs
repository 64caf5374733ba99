//! Scenarios of CEL rules' cost: the estimated cost checked when a rule is written and
//! the cost budget of its evaluation.
