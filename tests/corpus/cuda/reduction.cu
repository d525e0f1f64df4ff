// Block sum reduction in shared memory (bar.sync between steps) and one atomicAdd per block.
#define BLOCK 256

extern "C" __global__ void block_sum(const float *__restrict__ x, float *out, int n)
{
    __shared__ float buf[BLOCK];
    int tid = threadIdx.x;
    int i = blockIdx.x * BLOCK * 2 + tid;
    float v = 0.0f;
    if (i < n) v += x[i];
    if (i + BLOCK < n) v += x[i + BLOCK];
    buf[tid] = v;
    __syncthreads();
    for (int s = BLOCK / 2; s > 0; s >>= 1) {
        if (tid < s) buf[tid] += buf[tid + s];
        __syncthreads();
    }
    if (tid == 0) atomicAdd(out, buf[0]);
}
