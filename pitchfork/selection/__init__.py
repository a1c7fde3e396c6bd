"""Instruction selection on FPIR terms: lifting (`lift`: the engine choice; `greedy`: the
lifting TRS), lowering per ISA (`lower`), costs (`cost`,
`dagcost`), interval bounds (`bounds`), batched selection (`select_batch`), synthesized rule files
(`synthesized`) and the coverage report (`coverage`). Rule machinery is pitchfork.trs, instruction
tables pitchfork.targets."""
