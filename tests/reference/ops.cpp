// Checks the plain-loop reference (tests/support/reference.hpp) against small cases worked out
// by hand, so that it can in turn be trusted to check the executor.

#include <catch2/catch.hpp>

#include "support/reference.hpp"

#include <ipu/ipu.hpp>

#include <cmath>
#include <limits>
#include <vector>

namespace ref = ipu_test::ref;
using ref::tensor;

namespace {

/// 1, 2, ..., n.
tensor iota(int n, double first = 1) {
  tensor v(static_cast<std::size_t>(n));
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = first + static_cast<double>(i);
  return v;
}

/// Elements compare equal to within 1e-12 (relative).
void require_close(const tensor& actual, const tensor& expected) {
  REQUIRE(actual.size() == expected.size());
  for (std::size_t i = 0; i < actual.size(); ++i) {
    INFO("element " << i);
    CHECK(actual[i] == Approx(expected[i]).epsilon(1e-12));
  }
}

}  // namespace

TEST_CASE("conv 3x3 of ones at stride 1 sums the valid neighbours") {
  // x = 1..9 on a 3x3 grid; SAME padding of 1 on every side.
  const tensor y = ref::conv2d(iota(9), 1, 3, 3, 1, tensor(9, 1.0), 3, 1, 1, 1);
  require_close(y, {1 + 2 + 4 + 5, 1 + 2 + 3 + 4 + 5 + 6, 2 + 3 + 5 + 6,  //
                    1 + 2 + 4 + 5 + 7 + 8, 45, 2 + 3 + 5 + 6 + 8 + 9,    //
                    4 + 5 + 7 + 8, 4 + 5 + 6 + 7 + 8 + 9, 5 + 6 + 8 + 9});
}

TEST_CASE("conv weights are HWIO") {
  SECTION("spatial taps: kernel[ky][kx]") {
    // x = [[1, 2], [3, 4]], K = [[1, 10], [100, 1000]], k = 2: pad_total 1, all of it after.
    const tensor y = ref::conv2d({1, 2, 3, 4}, 1, 2, 2, 1, {1, 10, 100, 1000}, 2, 1, 1, 1);
    require_close(y, {1 * 1 + 2 * 10 + 3 * 100 + 4 * 1000, 2 * 1 + 4 * 100, 3 * 1 + 4 * 10, 4});
  }
  SECTION("channels: kernel[ci][co]") {
    // x = (1, 10); kernel [1, 1, 2, 3] = {{1, 2, 3}, {4, 5, 6}}.
    const tensor y = ref::conv2d({1, 10}, 1, 1, 1, 2, {1, 2, 3, 4, 5, 6}, 1, 3, 1, 1);
    require_close(y, {1 + 40, 2 + 50, 3 + 60});
  }
  SECTION("batch items are independent") {
    const tensor y = ref::conv2d({1, 10, 2, 20}, 2, 1, 1, 2, {1, 2, 3, 4, 5, 6}, 1, 3, 1, 1);
    require_close(y, {41, 52, 63, 82, 104, 126});
  }
}

TEST_CASE("stride 2 follows the SAME rule with the extra padding at the bottom and right") {
  SECTION("even size: 4 -> 2, pad_total 1, pad_before 0") {
    // x[i][j] = 4i + j. Windows: rows {0,1,2} or {2,3}, columns likewise.
    const tensor y = ref::conv2d(iota(16, 0), 1, 4, 4, 1, tensor(9, 1.0), 3, 1, 2, 1);
    require_close(y, {0 + 1 + 2 + 4 + 5 + 6 + 8 + 9 + 10, 2 + 3 + 6 + 7 + 10 + 11,
                      8 + 9 + 10 + 12 + 13 + 14, 10 + 11 + 14 + 15});
  }
  SECTION("odd size: 5 -> 3, pad_total 2, pad_before 1") {
    // x[i][j] = 5i + j. Windows: rows {0,1}, {1,2,3}, {3,4}, columns likewise.
    const tensor y = ref::conv2d(iota(25, 0), 1, 5, 5, 1, tensor(9, 1.0), 3, 1, 2, 1);
    REQUIRE(y.size() == 9);
    CHECK(y[0] == 0 + 1 + 5 + 6);
    CHECK(y[1] == 1 + 2 + 3 + 6 + 7 + 8);
    CHECK(y[4] == 6 + 7 + 8 + 11 + 12 + 13 + 16 + 17 + 18);
    CHECK(y[8] == 18 + 19 + 23 + 24);
  }
  SECTION("k = 1 needs no padding: picks every other cell") {
    const tensor y = ref::conv2d(iota(16, 0), 1, 4, 4, 1, {1}, 1, 1, 2, 1);
    require_close(y, {0, 2, 8, 10});
  }
  SECTION("output sizes: ceil(in / stride), per axis") {
    CHECK(ref::conv2d(tensor(7 * 8, 1.0), 1, 7, 8, 1, tensor(9, 1.0), 3, 1, 2, 1).size() == 4 * 4);
    CHECK(ref::conv2d(tensor(5 * 6, 1.0), 1, 5, 6, 1, tensor(9, 1.0), 3, 1, 2, 1).size() == 3 * 3);
    CHECK(ref::conv2d(tensor(9 * 9, 1.0), 1, 9, 9, 1, tensor(49, 1.0), 7, 1, 3, 1).size() == 3 * 3);
    CHECK(ref::max_pool(tensor(7 * 8, 1.0), 1, 7, 8, 1, 3, 2).size() == 4 * 4);
  }
}

TEST_CASE("grouped conv") {
  SECTION("depthwise by hand") {
    // groups = channels = filters = 2; kernel [1, 1, 1, 2] = {5, 7}.
    require_close(ref::conv2d({2, 3}, 1, 1, 1, 2, {5, 7}, 1, 2, 1, 2), {10, 21});
  }
  SECTION("equals one ordinary conv per group") {
    constexpr int n = 2, h = 4, w = 5, c = 4, k = 3, filters = 6, groups = 2;
    constexpr int cg = c / groups, fg = filters / groups;
    tensor x(n * h * w * c), kernel(k * k * cg * filters);
    for (std::size_t i = 0; i < x.size(); ++i) x[i] = std::sin(0.7 * static_cast<double>(i));
    for (std::size_t i = 0; i < kernel.size(); ++i)
      kernel[i] = std::cos(1.3 * static_cast<double>(i));
    const tensor y = ref::conv2d(x, n, h, w, c, kernel, k, filters, 2, groups);
    const std::size_t positions = y.size() / filters;
    REQUIRE(positions == std::size_t{n} * 2 * 3);
    for (int g = 0; g < groups; ++g) {
      tensor xg, kg;  // group g's input channels, and its columns of the kernel
      for (std::size_t p = 0; p < x.size() / c; ++p)
        for (int ci = 0; ci < cg; ++ci) xg.push_back(x[p * c + std::size_t(g * cg + ci)]);
      for (std::size_t t = 0; t < kernel.size() / filters; ++t)
        for (int co = 0; co < fg; ++co)
          kg.push_back(kernel[t * filters + std::size_t(g * fg + co)]);
      const tensor yg = ref::conv2d(xg, n, h, w, cg, kg, k, fg, 2, 1);
      for (std::size_t p = 0; p < positions; ++p)
        for (int co = 0; co < fg; ++co)
          CHECK(y[p * filters + std::size_t(g * fg + co)] == yg[p * fg + std::size_t(co)]);
    }
  }
}

TEST_CASE("pooling") {
  SECTION("avg pool divides by the valid cells only") {
    // x = 1..9 on a 3x3 grid, 3x3 window, stride 1.
    const tensor y = ref::avg_pool(iota(9), 1, 3, 3, 1, 3, 1);
    require_close(y, {12.0 / 4, 21.0 / 6, 16.0 / 4, 27.0 / 6, 45.0 / 9, 33.0 / 6, 24.0 / 4,
                      39.0 / 6, 28.0 / 4});
  }
  SECTION("avg pool at stride 2 with padding after") {
    // x[i][j] = 4i + j, 3x3 window, stride 2: last window is rows {2,3} x columns {2,3}.
    const tensor y = ref::avg_pool(iota(16, 0), 1, 4, 4, 1, 3, 2);
    require_close(y, {45.0 / 9, 39.0 / 6, 66.0 / 6, 50.0 / 4});
  }
  SECTION("max pool") {
    require_close(ref::max_pool(iota(9), 1, 3, 3, 1, 3, 1), {5, 6, 6, 8, 9, 9, 8, 9, 9});
    require_close(ref::max_pool(iota(16, 0), 1, 4, 4, 1, 2, 2), {5, 7, 13, 15});
  }
  SECTION("max pool ignores padding: all-negative input") {
    tensor x = iota(9);
    for (double& v : x) v = -v;
    require_close(ref::max_pool(x, 1, 3, 3, 1, 3, 1), {-1, -1, -2, -1, -1, -2, -4, -4, -5});
  }
  SECTION("channels pool separately") {
    // 1x2x2x2: channel 0 = 1, 2, 3, 4; channel 1 = 40, 30, 20, 10.
    const tensor x = {1, 40, 2, 30, 3, 20, 4, 10};
    require_close(ref::max_pool(x, 1, 2, 2, 2, 2, 2), {4, 40});
    require_close(ref::avg_pool(x, 1, 2, 2, 2, 2, 2), {2.5, 25});
  }
  SECTION("global average pool: [n, h, w, c] -> [n, c]") {
    const tensor x = {1, 10, 2, 20, 3, 30, 4, 40,   // item 0
                      0, 0, 0, 0, 0, 0, 8, -4};      // item 1
    require_close(ref::global_avg_pool(x, 2, 2, 2, 2), {2.5, 25, 2, -1});
  }
}

TEST_CASE("softmax") {
  SECTION("matches the hand formula and sums to 1") {
    const tensor y = ref::softmax({1, 2, 3, 0, 0, 0}, 2, 3);
    const double z = std::exp(1.0) + std::exp(2.0) + std::exp(3.0);
    require_close(y, {std::exp(1.0) / z, std::exp(2.0) / z, std::exp(3.0) / z, 1.0 / 3, 1.0 / 3,
                      1.0 / 3});
    CHECK(y[0] + y[1] + y[2] == Approx(1.0).epsilon(1e-15));
  }
  SECTION("large logits do not overflow") {
    const tensor y = ref::softmax({1000, 1001}, 1, 2);
    const double e = std::exp(1.0);
    require_close(y, {1 / (1 + e), e / (1 + e)});
  }
}

TEST_CASE("dense adds the bias to x times kernel") {
  // x [2, 3]; kernel [3, 2] = {{1, 0}, {0, 1}, {1, 1}}; bias {10, 20}.
  const tensor y = ref::dense({1, 2, 3, 4, 5, 6}, 2, 3, {1, 0, 0, 1, 1, 1}, 2, {10, 20});
  require_close(y, {1 + 3 + 10, 2 + 3 + 20, 4 + 6 + 10, 5 + 6 + 20});
}

TEST_CASE("batch norm, relu and add") {
  // Two positions, two channels. eps = 0 first, so the numbers are exact.
  const tensor x = {1, 2, 3, 4};
  const tensor scale = {2, 3}, shift = {1, -1}, mean = {1, 2}, var = {4, 0.25};
  require_close(ref::batch_norm(x, 2, scale, shift, mean, var, 0.0),
                {(1 - 1) / 2.0 * 2 + 1, (2 - 2) / 0.5 * 3 - 1, (3 - 1) / 2.0 * 2 + 1,
                 (4 - 2) / 0.5 * 3 - 1});
  // The default eps is 1e-5, added to the variance.
  CHECK(ref::batch_norm(x, 2, scale, shift, mean, var)[3] ==
        Approx(2 / std::sqrt(0.25 + 1e-5) * 3 - 1).epsilon(1e-14));
  require_close(ref::relu({-1, 0, 2.5, -0.0}), {0, 0, 2.5, 0});
  require_close(ref::add({1, 2, 3}, {10, 20, 30}), {11, 22, 33});
}

TEST_CASE("sizes that disagree are an error") {
  CHECK_THROWS_AS(ref::conv2d(tensor(8), 1, 3, 3, 1, tensor(9), 3, 1, 1, 1), std::invalid_argument);
  CHECK_THROWS_AS(ref::conv2d(tensor(4), 1, 1, 1, 4, tensor(4), 1, 4, 1, 3), std::invalid_argument);
  CHECK_THROWS_AS(ref::add({1, 2}, {1}), std::invalid_argument);
  CHECK_THROWS_AS(ref::dense({1, 2}, 1, 2, {1, 2}, 2, {0, 0}), std::invalid_argument);
}

TEST_CASE("forward walks a hand-written node table") {
  using ipu::op;
  using ipu::op_of;
  namespace ops = ipu::ops;
  const auto node = [](op kind, int input, ipu::shape in, ipu::shape out, int filters = 0,
                       int kernel = 0, int shortcut = -1) {
    ipu::node n{};
    n.kind = kind;
    n.inputs = {input, shortcut, -1, -1};
    n.input_count = input < 0 ? 0 : shortcut < 0 ? 1 : 2;
    n.layer = {.filters = filters, .kernel = kernel};
    n.in = in;
    n.out = out;
    return n;
  };
  const ipu::shape x4 = ipu::nhwc(1, 2, 2, 1);
  const std::array<ipu::node, 8> table = {
      node(op_of<ops::input>, -1, x4, x4),
      node(op_of<ops::conv>, 0, x4, x4, 1, 1),                       // 1: x * 2
      node(op_of<ops::batch_norm>, 1, x4, x4),                       // 2: + 1
      node(op_of<ops::add>, 2, x4, x4, 0, 0, /*shortcut*/ 0),        // 3: + x
      node(op_of<ops::relu>, 3, x4, x4),                             // 4
      node(op_of<ops::global_avg_pool>, 4, x4, ipu::nc(1, 1)),       // 5
      node(op_of<ops::dense>, 5, ipu::nc(1, 1), ipu::nc(1, 2), 2),   // 6
      node(op_of<ops::softmax>, 6, ipu::nc(1, 2), ipu::nc(1, 2)),    // 7
  };
  const auto params_of = [](int i) {
    ref::params p;
    if (i == 1) p.kernel = {2};
    if (i == 2) p = {{}, {}, {1}, {1}, {0}, {1 - 1e-5}};  // scale 1, shift 1, mean 0, var + eps = 1
    if (i == 6) p = {{1, -1}, {0.5, 0}, {}, {}, {}, {}};
    return p;
  };
  // x = {1, -2, 3, -4} -> conv {2, -4, 6, -8} -> bn {3, -3, 7, -7} -> add {4, -5, 10, -11}
  // -> relu {4, 0, 10, 0} -> mean 3.5 -> dense {4, -3.5} -> softmax.
  const tensor y = ref::forward(table, {1, -2, 3, -4}, params_of);
  const double e = std::exp(-7.5);
  REQUIRE(y.size() == 2);
  CHECK(y[0] == Approx(1 / (1 + e)).epsilon(1e-9));
  CHECK(y[1] == Approx(e / (1 + e)).epsilon(1e-9));

  SECTION("a wrong input size is an error") {
    CHECK_THROWS_AS(ref::forward(table, {1, 2, 3}, params_of), std::invalid_argument);
  }
}

TEST_CASE("forward reads a library-lowered node table the same way as direct calls") {
  namespace nn = ipu::nn;
  constexpr auto model = ipu::input<ipu::f32, 2, 6, 6, 4>
                       | nn::conv<6, 3, 2, 2> | nn::batch_norm | nn::relu
                       | nn::residual(nn::conv<6, 1> | nn::relu) | nn::avg_pool<3, 1>
                       | nn::max_pool<2, 2> | nn::global_avg_pool | nn::dense<3> | nn::softmax;
  const auto& table = ipu::node_table_v<decltype(model)>;

  // Deterministic parameters: index-based, different per node.
  const auto fill = [](std::size_t size, int seed) {
    tensor v(size);
    for (std::size_t i = 0; i < v.size(); ++i)
      v[i] = std::sin(0.37 * static_cast<double>(i) + seed);
    return v;
  };
  const auto params_of = [&](int i) {
    const ipu::node& nd = table[static_cast<std::size_t>(i)];
    const auto c = static_cast<std::size_t>(nd.in.channels());
    const auto f = static_cast<std::size_t>(nd.layer.filters);
    const auto k = static_cast<std::size_t>(nd.layer.kernel.area());
    ref::params p;
    if (nd.kind == ipu::op_of<ipu::ops::conv>)
      p.kernel = fill(k * c / static_cast<std::size_t>(nd.layer.groups) * f, i);
    if (nd.kind == ipu::op_of<ipu::ops::dense>) {
      p.kernel = fill(c * f, i);
      p.bias = fill(f, i + 100);
    }
    if (nd.kind == ipu::op_of<ipu::ops::batch_norm>) {
      p.scale = fill(c, i);
      p.shift = fill(c, i + 1);
      p.mean = fill(c, i + 2);
      p.variance = fill(c, i + 3);
      for (double& v : p.variance) v = v * v + 0.5;
    }
    return p;
  };
  const tensor x = fill(2 * 6 * 6 * 4, 7);
  const tensor y = ref::forward(table, x, params_of);

  // The same network by direct calls. The node indices are those of the flattened table.
  REQUIRE(table.size() == 12);
  REQUIRE(table[6].kind == ipu::op_of<ipu::ops::add>);
  REQUIRE(table[10].kind == ipu::op_of<ipu::ops::dense>);
  const ref::params p1 = params_of(1), p2 = params_of(2), p4 = params_of(4), p10 = params_of(10);
  const tensor a = ref::relu(ref::batch_norm(ref::conv2d(x, 2, 6, 6, 4, p1.kernel, 3, 6, 2, 2), 6,
                                             p2.scale, p2.shift, p2.mean, p2.variance));
  const tensor b = ref::relu(ref::conv2d(a, 2, 3, 3, 6, p4.kernel, 1, 6, 1, 1));
  const tensor pooled =
      ref::max_pool(ref::avg_pool(ref::add(b, a), 2, 3, 3, 6, 3, 1), 2, 3, 3, 6, 2, 2);
  const tensor expected = ref::softmax(
      ref::dense(ref::global_avg_pool(pooled, 2, 2, 2, 6), 2, 6, p10.kernel, 3, p10.bias), 2, 3);
  require_close(y, expected);
}

TEST_CASE("max_relative_error") {
  const tensor expected = {100, -50, 0, 1};
  SECTION("relative to |e|, or to the floor 1e-3 * max |e| near zero") {
    const float exact[] = {100, -50, 0, 1};
    CHECK(ref::max_relative_error(expected, exact, 4) == 0);
    const float off[] = {101, -50, 0, 1};
    CHECK(ref::max_relative_error(expected, off, 4) == Approx(0.01));
    const double near_zero[] = {100, -50, 0.01, 1};
    CHECK(ref::max_relative_error(expected, near_zero, 4) == Approx(0.01 / 0.1));
    const double small[] = {100, -50, 0, 1.5};
    CHECK(ref::max_relative_error(expected, small, 4) == Approx(0.5));
  }
  SECTION("an explicit floor") {
    const double near_zero[] = {100, -50, 0.01, 1};
    CHECK(ref::max_relative_error(expected, near_zero, 4, 1.0) == Approx(0.01));
  }
  SECTION("all-zero expected values give the absolute error") {
    const double actual[] = {0, 0.25};
    CHECK(ref::max_relative_error(tensor{0, 0}, actual, 2) == Approx(0.25));
  }
  SECTION("a NaN is reported") {
    const double actual[] = {100, std::numeric_limits<double>::quiet_NaN(), 0, 1};
    CHECK(std::isnan(ref::max_relative_error(expected, actual, 4)));
  }
}

TEST_CASE("explicit padding, a bias, and averages that count padding") {
  SECTION("VALID: no padding, floor((in - k) / stride) + 1") {
    // x[i][j] = 3i + j on 3x3, a 2x2 kernel of ones: the four 2x2 sums.
    const tensor y = ref::conv2d(iota(9, 0), 1, 3, 3, 1, tensor(4, 1.0), 2, 1, 1, 1, {false});
    require_close(y, {0 + 1 + 3 + 4, 1 + 2 + 4 + 5, 3 + 4 + 6 + 7, 4 + 5 + 7 + 8});
    CHECK(ref::conv2d(tensor(7 * 7, 1.0), 1, 7, 7, 1, tensor(49, 1.0), 7, 1, 2, 1, {false}).size() == 1);
  }
  SECTION("asymmetric amounts: two rows above, none below, one column right") {
    // x = 1..4 on 2x2, k = 2: out = (2 + 2 - 2) / 1 + 1 = 3 rows, (2 + 1 - 2) + 1 = 2 columns.
    // Row 0's windows lie wholly in the padding; row 1 reads image row 0; row 2 both.
    const tensor y = ref::conv2d(iota(4), 1, 2, 2, 1, tensor(4, 1.0), 2, 1, 1, 1, {false, 2, 0, 0, 1});
    require_close(y, {0, 0, 1 + 2, 2, 1 + 2 + 3 + 4, 2 + 4});
  }
  SECTION("a bias per filter") {
    const tensor y = ref::conv2d({1, 10}, 1, 1, 1, 2, {1, 2, 3, 4, 5, 6}, 1, 3, 1, 1, {}, {0.5, -1, 2});
    require_close(y, {41.5, 51, 65});
  }
  SECTION("average over a 3x3 window padded by 1 on a 2x2 image") {
    // Every window holds the whole image, sum 10: 4 cells inside, 9 in the padded image.
    require_close(ref::avg_pool(iota(4), 1, 2, 2, 1, 3, 1, {false, 1, 1, 1, 1}), tensor(4, 2.5));
    require_close(ref::avg_pool(iota(4), 1, 2, 2, 1, 3, 1, {false, 1, 1, 1, 1}, true), tensor(4, 10.0 / 9));
    // SAME on 3x3 at stride 2: out 2, total padding 1, after: window 0 has 4 image cells and
    // 4 padded ones, window 1 of row 0 (columns 2, 3) 2 image cells of 4.
    const tensor same = ref::avg_pool(iota(9, 0), 1, 3, 3, 1, 2, 2, {}, true);
    require_close(same, {(0 + 1 + 3 + 4) / 4.0, (2 + 5) / 4.0, (6 + 7) / 4.0, 8 / 4.0});
  }
  SECTION("max pooling never takes the padding") {
    require_close(ref::max_pool({-1, -2, -3, -4}, 1, 2, 2, 1, 3, 2, {false, 1, 1, 1, 1}), {-1});
  }
}
