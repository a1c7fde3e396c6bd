"""A generator whose algorithm and schedule depend on GeneratorParams: a rounding u8 average of a 3-tap
horizontal window, scaled by a runtime u8 `gain` and shifted right by `shift` with rounding and
saturation; `lanes` sets the vector width (0: the target's natural width), `tail` the tail strategy,
`use_fpir` writes the average with Halide's FPIR intrinsic instead of integer arithmetic, and
`input.type` could be set because `input` leaves its type open."""

import halide as hl

x, y = hl.vars("x y")


@hl.generator(name="scaled_avg")
class ScaledAverage:
    lanes = hl.GeneratorParam(0)
    shift = hl.GeneratorParam(4)
    use_fpir = hl.GeneratorParam(False)
    tail = hl.GeneratorParam("guard")

    input = hl.InputBuffer(None, 2)
    gain = hl.InputScalar(hl.UInt(8))
    output = hl.OutputBuffer(hl.UInt(8), 2)

    def generate(self):
        a, b, c = self.input[x - 1, y], self.input[x, y], self.input[x + 1, y]
        if self.use_fpir:
            avg = hl.rounding_halving_add(hl.rounding_halving_add(a, c), b)
        else:
            t = hl.u8((hl.u16(a) + hl.u16(c) + 1) >> 1)
            avg = hl.u8((hl.u16(t) + hl.u16(b) + 1) >> 1)
        scaled = hl.widening_mul(avg, self.gain)
        self.output[x, y] = hl.saturating_cast(hl.UInt(8), hl.rounding_shift_right(scaled, hl.u16(self.shift)))

        lanes = self.lanes or self.natural_vector_size(hl.UInt(8))
        tail = {"guard": hl.TailStrategy.GuardWithIf, "predicate": hl.TailStrategy.Predicate,
                "shift": hl.TailStrategy.ShiftInwards}[self.tail]
        self.output.vectorize(x, lanes, tail)


if __name__ == "__main__":
    hl.main()
