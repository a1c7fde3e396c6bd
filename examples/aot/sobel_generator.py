"""The Sobel filter (the paper's Figure 2a) as an ordinary Halide Python generator, scheduled as in the
paper with the target's natural u8 vector width (16 on Neon, 32 on AVX2, 128 on HVX 128B). Nothing here
knows about PITCHFORK:

    python3 sobel_generator.py -g sobel -f sobel_halide -o build -e static_library,c_header target=host              # Halide
    python3 -m pitchfork compile sobel_generator.py -g sobel -f sobel_pitchfork -o build -e static_library,c_header target=host

`parallel=false` (a GeneratorParam) runs the rows of tiles on one thread; the tests of the AOT layer
(tests/pitchfork/aot/) compile this file that way. pitchfork.frontend.examples.sobel3x3 is the same
algorithm built in process from ImageParams, at the benchmark's widths (SPEC §17); it cannot be this
file, which must stay plain Halide.
"""

import halide as hl

x, y, xi, yi = hl.vars("x y xi yi")


@hl.generator(name="sobel")
class Sobel:
    input = hl.InputBuffer(hl.UInt(8), 2)
    output = hl.OutputBuffer(hl.UInt(8), 2)
    #: rows of tiles on Halide's thread pool (HL_NUM_THREADS)
    parallel = hl.GeneratorParam(True)

    def generate(self):
        edge = hl.BoundaryConditions.repeat_edge(self.input)
        v = hl.Func("v")
        v[x, y] = hl.u16(edge[x, y])
        hx = hl.Func("hx")
        hx[x, y] = v[x - 1, y] + 2 * v[x, y] + v[x + 1, y]
        hy = hl.Func("hy")
        hy[x, y] = v[x, y - 1] + 2 * v[x, y] + v[x, y + 1]
        sx = hl.Func("sx")
        sx[x, y] = hl.absd(hx[x, y - 1], hx[x, y + 1])
        sy = hl.Func("sy")
        sy[x, y] = hl.absd(hy[x - 1, y], hy[x + 1, y])
        self.output[x, y] = hl.u8(hl.clamp(sx[x, y] + sy[x, y], 0, 255))

        lanes = self.natural_vector_size(hl.UInt(8))
        self.output.tile(x, y, xi, yi, lanes, 4, hl.TailStrategy.RoundUp).vectorize(xi).unroll(yi)
        if self.parallel:
            self.output.parallel(y)
        ex = edge.args()[0]
        edge.compute_at(self.output, y).align_storage(ex, 128).vectorize(ex, lanes, hl.TailStrategy.RoundUp)


if __name__ == "__main__":
    hl.main()
