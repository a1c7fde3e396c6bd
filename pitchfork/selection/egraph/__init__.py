"""The equality-saturation lifter (`--engine egraph`): FPIR in an egglog e-graph, saturated with the
lifting rules and the algebraic equivalences of rules/egraph/algebra.rules, extracted by the
target-agnostic cost of pitchfork/cost.py. See engine.py."""
