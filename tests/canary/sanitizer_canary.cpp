// Deliberately broken: reads one element past a heap array. Under the asan preset this must be
// reported and must fail the process; .ci/run runs it expecting exactly that.
#include <cstdio>
#include <cstdlib>

int main(int argc, char**) {
  int* values = static_cast<int*>(std::malloc(4 * sizeof(int)));
  for (int i = 0; i < 4; ++i) values[i] = i;
  volatile int index = 3 + argc;  // 4 when run without arguments: one past the end
  std::printf("%d\n", values[index]);
  std::free(values);
  return 0;
}
