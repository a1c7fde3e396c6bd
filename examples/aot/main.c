// An application using a Halide generator ahead of time, built twice: by PITCHFORK (sobel_pitchfork)
// and by Halide (sobel_halide). Both are called the same way, through halide_buffer_t; swapping one
// library for the other changes nothing in this file but the function name. Plain C (HalideRuntime.h
// and the generated headers are C), so a C cross compiler is enough (aarch64-linux-gnu-gcc).
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "HalideRuntime.h"
#include "sobel_halide.h"
#include "sobel_pitchfork.h"

typedef int (*pipeline_fn)(struct halide_buffer_t *, struct halide_buffer_t *);

// A 2-D buffer view: `host` is the element at (min0, min1), rows `stride` elements apart.
static halide_buffer_t view(void *host, halide_dimension_t *dim, int min0, int ext0, int min1, int ext1,
                            int stride, uint8_t code, uint8_t bits) {
    halide_buffer_t b;
    memset(&b, 0, sizeof b);
    dim[0].min = min0, dim[0].extent = ext0, dim[0].stride = 1, dim[0].flags = 0;
    dim[1].min = min1, dim[1].extent = ext1, dim[1].stride = stride, dim[1].flags = 0;
    b.host = (uint8_t *)host;
    b.type.code = code;
    b.type.bits = bits;
    b.type.lanes = 1;
    b.dimensions = 2;
    b.dim = dim;
    return b;
}

static double now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

static double ms_per_call(pipeline_fn f, halide_buffer_t *in, halide_buffer_t *out, int calls) {
    double best = 1e30;
    for (int round = 0; round < 5; ++round) {
        double t0 = now_ms();
        for (int i = 0; i < calls; ++i) f(in, out);
        double dt = (now_ms() - t0) / calls;
        if (dt < best) best = dt;
    }
    return best;
}

int main(int argc, char **argv) {
    enum { W = 1024, H = 768, PW = W + 40, PH = H + 20 };
    // A larger image; the pipelines read a cropped window of it (nonzero mins, padded row stride).
    uint8_t *image = malloc((size_t)PW * PH);
    uint32_t seed = 1;
    for (int i = 0; i < PW * PH; ++i) image[i] = (uint8_t)((seed = seed * 1103515245u + 12345u) >> 16);
    halide_dimension_t din[2], da[2], db[2], dw[2];
    halide_buffer_t in = view(image + 7 * PW + 13, din, 13, W, 7, H, PW, halide_type_uint, 8);

    uint8_t *a_data = calloc((size_t)W * H, 1), *b_data = calloc((size_t)W * H, 1);
    halide_buffer_t a = view(a_data, da, 0, W, 0, H, W, halide_type_uint, 8);
    halide_buffer_t b = view(b_data, db, 0, W, 0, H, W, halide_type_uint, 8);
    int ra = sobel_pitchfork(&in, &a), rb = sobel_halide(&in, &b);
    if (ra != 0 || rb != 0) {
        printf("pipeline failed: %d %d\n", ra, rb);
        return 1;
    }
    size_t diff = 0;
    for (int i = 0; i < W * H; ++i) diff += a_data[i] != b_data[i];
    printf("sobel %dx%d: PITCHFORK and Halide outputs are %s\n", W, H, diff ? "DIFFERENT" : "identical");

    // A bad call: Halide's checks, error codes and messages (through halide_error) are the same.
    int16_t *wrong_data = calloc((size_t)W * H, 2);
    halide_buffer_t wrong = view(wrong_data, dw, 0, W, 0, H, W, halide_type_int, 16);
    int ea = sobel_pitchfork(&in, &wrong), eb = sobel_halide(&in, &wrong);
    printf("wrong output type: error %d (PITCHFORK), %d (Halide)\n", ea, eb);

    int calls = argc > 1 ? atoi(argv[1]) : 20;
    double tp = ms_per_call(sobel_pitchfork, &in, &a, calls), th = ms_per_call(sobel_halide, &in, &b, calls);
    printf("time per call: PITCHFORK %.3f ms, Halide %.3f ms (Halide/PITCHFORK %.2f)\n", tp, th, th / tp);
    return diff != 0 || ea != eb || ea == 0;
}
