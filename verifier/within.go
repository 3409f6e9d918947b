package verifier

// within reports whether every value of cur is a value of old, for
// pruning. Unlike Scalar.In it does not first check that cur is non-empty:
// the states pruning compares never hold empty scalars (impossible branches
// are dropped), and that check dominated the cost of state comparison.
func within(cur, old Scalar) bool {
	return old.Umin <= cur.Umin && cur.Umax <= old.Umax &&
		old.Smin <= cur.Smin && cur.Smax <= old.Smax &&
		old.U32min <= cur.U32min && cur.U32max <= old.U32max &&
		old.S32min <= cur.S32min && cur.S32max <= old.S32max &&
		cur.Var.In(old.Var)
}
