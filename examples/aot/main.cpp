// An application using a Halide generator ahead of time, built twice: by PITCHFORK (sobel_pitchfork)
// and by Halide (sobel_halide). Both are called the same way, through halide_buffer_t; swapping one
// library for the other changes nothing in this file but the function name.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>

#include "HalideBuffer.h"
#include "sobel_halide.h"
#include "sobel_pitchfork.h"

using Halide::Runtime::Buffer;
using Pipeline = int (*)(halide_buffer_t *, halide_buffer_t *);

static double ms_per_call(Pipeline f, Buffer<uint8_t> &in, Buffer<uint8_t> &out, int calls) {
    double best = 1e30;
    for (int round = 0; round < 5; ++round) {
        auto t0 = std::chrono::steady_clock::now();
        for (int i = 0; i < calls; ++i) f(in, out);
        std::chrono::duration<double, std::milli> dt = std::chrono::steady_clock::now() - t0;
        best = std::min(best, dt.count() / calls);
    }
    return best;
}

int main(int argc, char **argv) {
    const int W = 1024, H = 768;
    Buffer<uint8_t> in(W + 40, H + 20);  // a larger image; the pipelines read a cropped window of it
    std::mt19937 rng(1);
    in.for_each_value([&](uint8_t &v) { v = (uint8_t)rng(); });
    in.crop(0, 13, W);                    // nonzero mins, padded row stride
    in.crop(1, 7, H);

    Buffer<uint8_t> a(W, H), b(W, H);
    int ra = sobel_pitchfork(in, a), rb = sobel_halide(in, b);
    if (ra != 0 || rb != 0) {
        std::printf("pipeline failed: %d %d\n", ra, rb);
        return 1;
    }
    size_t diff = 0;
    a.for_each_element([&](int x, int y) { diff += a(x, y) != b(x, y); });
    std::printf("sobel %dx%d: PITCHFORK and Halide outputs are %s\n", W, H, diff ? "DIFFERENT" : "identical");

    // A bad call: Halide's checks, error codes and messages (through halide_error) are the same.
    Buffer<int16_t> wrong(W, H);
    int ea = sobel_pitchfork(in, wrong), eb = sobel_halide(in, wrong);
    std::printf("wrong output type: error %d (PITCHFORK), %d (Halide)\n", ea, eb);

    int calls = argc > 1 ? std::atoi(argv[1]) : 20;
    double tp = ms_per_call(sobel_pitchfork, in, a, calls), th = ms_per_call(sobel_halide, in, b, calls);
    std::printf("time per call: PITCHFORK %.3f ms, Halide %.3f ms (Halide/PITCHFORK %.2f)\n", tp, th, th / tp);
    return diff != 0 || ea != eb || ea == 0;
}
