#include <ipu/ipu.hpp>

#include <cstdio>

// Answered entirely at compile time: the ResNet-50 graph is a type.
static_assert(ipu::param_count_v<ipu::models::resnet50<ipu::f32, 1>> == 25'557'032);

int main() {
  std::printf("ipu %s: resnet50 has %lld parameters\n", ipu::version,
              static_cast<long long>(ipu::param_count_v<ipu::models::resnet50<ipu::f32, 1>>));
  return 0;
}
