//! Sparse source→target offset maps (being built; see issue 4).
