// NCCL on a communicator of one rank: which reductions of which types does it run?
//
// Every reducing collective at world 1 goes through ncclLaunchOneRank (src/device/onerank.cu),
// which copies, except for a PreMulSum (avg on floats, and a user's ncclRedOpCreatePreMulSum).
// Its fp8 cases sit under `#if defined(__CUDA_FP8_TYPES_EXIST__) && __CUDA_ARCH__ >= 900` in
// host code, where __CUDA_ARCH__ is not defined, so this program expects fp8 avg to fail with
// ncclInvalidArgument while fp8 sum and bf16/f32 avg succeed with exact results.
//
// Build and run on a GPU machine (docs/GPU.md, "What the first GPU runs found"):
//   nvcc -o /tmp/onerank scripts/nccl_onerank_fp8.cu -I$NCCL/include -L$NCCL/lib -l:libnccl.so.2
//   LD_LIBRARY_PATH=$NCCL/lib /tmp/onerank
// Exit 0 when every line matched its expectation, 1 otherwise.
#include <cstdio>
#include <cstring>
#include <cuda_runtime.h>
#include <nccl.h>

struct Case {
    const char* name;
    ncclDataType_t type;
    size_t size;
    ncclRedOp_t op;
    bool expect_ok;
};

static bool run_case(ncclComm_t comm, cudaStream_t s, const Case& c) {
    const size_t n = 1024;
    unsigned char host[8 * 1024], back[8 * 1024];
    // Every element is 1.0 (1 for i32): one rank's sum or average is its input, bit for bit.
    const unsigned char e4m3_one[] = {0x38}, e5m2_one[] = {0x3c}, bf16_one[] = {0x80, 0x3f};
    const unsigned char f32_one[] = {0, 0, 0x80, 0x3f}, i32_one[] = {1, 0, 0, 0};
    const unsigned char* one = c.type == ncclFloat8e4m3 ? e4m3_one
                               : c.type == ncclFloat8e5m2 ? e5m2_one
                               : c.type == ncclBfloat16   ? bf16_one
                               : c.type == ncclFloat32    ? f32_one
                                                          : i32_one;
    for (size_t i = 0; i < n; i++) memcpy(host + i * c.size, one, c.size);
    void *in = nullptr, *out = nullptr;
    cudaMalloc(&in, n * c.size);
    cudaMalloc(&out, n * c.size);
    cudaMemcpy(in, host, n * c.size, cudaMemcpyHostToDevice);
    cudaMemset(out, 0xff, n * c.size);
    ncclResult_t r = ncclAllReduce(in, out, n, c.type, c.op, comm, s);
    cudaError_t e = cudaStreamSynchronize(s);
    bool exact = false;
    if (r == ncclSuccess && e == cudaSuccess) {
        cudaMemcpy(back, out, n * c.size, cudaMemcpyDeviceToHost);
        exact = memcmp(back, host, n * c.size) == 0;
    }
    bool ok = (r == ncclSuccess) == c.expect_ok && (!c.expect_ok || exact);
    printf("%-22s ncclAllReduce: %-22s cuda: %-12s result %s; expected %s: %s\n", c.name,
           ncclGetErrorString(r), cudaGetErrorName(e),
           r == ncclSuccess ? (exact ? "exact" : "WRONG") : "-",
           c.expect_ok ? "success" : "ncclInvalidArgument", ok ? "as expected" : "NOT AS EXPECTED");
    cudaFree(in);
    cudaFree(out);
    return ok;
}

int main() {
    int version = 0;
    ncclGetVersion(&version);
    printf("NCCL %d\n", version);
    ncclComm_t comm;
    int dev = 0;
    if (ncclCommInitAll(&comm, 1, &dev) != ncclSuccess) {
        printf("ncclCommInitAll failed\n");
        return 1;
    }
    cudaStream_t s;
    cudaStreamCreate(&s);
    const Case cases[] = {
        {"f8e4m3 sum", ncclFloat8e4m3, 1, ncclSum, true},
        {"f8e4m3 avg", ncclFloat8e4m3, 1, ncclAvg, false},
        {"f8e5m2 avg", ncclFloat8e5m2, 1, ncclAvg, false},
        {"bf16 avg", ncclBfloat16, 2, ncclAvg, true},
        {"f32 avg", ncclFloat32, 4, ncclAvg, true},
        {"i32 avg", ncclInt32, 4, ncclAvg, true},
    };
    bool all = true;
    for (const Case& c : cases) all = run_case(comm, s, c) && all;
    ncclCommDestroy(comm);
    return all ? 0 : 1;
}
