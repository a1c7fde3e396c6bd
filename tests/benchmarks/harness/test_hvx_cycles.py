"""benchmarks/harness/hvx_cycles.py: the dependency-aware packet-cycle model on hand-written packets."""

from __future__ import annotations

from benchmarks.harness.hvx_cycles import block_cycles, latency


def test_independent_alu_packets_cost_one_cycle_each() -> None:
    pk = [("v0.h = vadd(v1.h,v2.h)",), ("v3.h = vsub(v4.h,v5.h)",), ("v6 = vand(v7,v8)",)]
    assert block_cycles(pk, loop=False) == 3.0


def test_a_multiply_result_read_by_the_next_packet_stalls_one_cycle() -> None:
    pk = [("v0.h = vmpy(v1.ub,r2.b)",), ("v3.h = vadd(v0.h,v4.h)",)]
    assert latency(pk[0][0]) == 2
    assert block_cycles(pk, loop=False) == 3.0
    alu = [("v0.h = vadd(v1.h,v2.h)",), ("v3.h = vadd(v0.h,v4.h)",)]
    assert block_cycles(alu, loop=False) == 2.0


def test_new_and_cur_operands_do_not_stall() -> None:
    pk = [("v0.cur = vmem(r0+#0)", "v1.h = vadd(v0.h,v2.h)"), ("vmem(r1+#0) = v1.new",)]
    assert block_cycles(pk, loop=False) == 2.0


def test_a_loop_carried_multiply_accumulate_costs_its_latency_per_iteration() -> None:
    assert block_cycles([("v1.uw += vrmpy(v3.ub,v4.ub)",)], loop=True) == 2.0
    assert block_cycles([("v1.w = vadd(v1.w,v3.w)",)], loop=True) == 1.0


def test_register_pairs_are_both_registers() -> None:
    pk = [("v1:0.h = vmpy(v2.ub,r3.b)",), ("v4.h = vadd(v0.h,v5.h)",)]
    assert block_cycles(pk, loop=False) == 3.0
