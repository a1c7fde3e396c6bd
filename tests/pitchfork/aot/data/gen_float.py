"""A generator with float scalar parameters: u8 output of a float32 gain and a float64 offset, so the
entry point takes a C float and a C double (Halide's calling convention for float Params)."""

import halide as hl

x, y = hl.vars("x y")


@hl.generator(name="float_gain")
class FloatGain:
    input = hl.InputBuffer(hl.UInt(8), 2)
    gain = hl.InputScalar(hl.Float(32))
    offset = hl.InputScalar(hl.Float(64))
    output = hl.OutputBuffer(hl.UInt(8), 2)

    def generate(self):
        # an f32 product widened before the f64 add: no fused multiply-add can change the bits
        v = hl.f64(hl.f32(self.input[x, y]) * self.gain) + self.offset
        self.output[x, y] = hl.u8(hl.clamp(v, 0.0, 255.0))
        self.output.vectorize(x, self.natural_vector_size(hl.Float(32)), hl.TailStrategy.GuardWithIf)


if __name__ == "__main__":
    hl.main()
