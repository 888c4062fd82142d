// Generates tests/data/noise/uniform_real.txt: libstdc++'s uniform_real_distribution<double>
// on std::mt19937, the way the published G10 simulator draws its kernel-time noise.
//   g++ -O2 -o uniform_real uniform_real.cc && ./uniform_real > uniform_real.txt
// Each block: "seed SEED sigma SIGMA" then 1000 draws as hex floats.  SEED "default" is a
// default-constructed engine (std::mt19937's default seed, 5489), the artifact's ran_seed 1.
#include <cstdio>
#include <random>
#include <string>

static void block(const char* label, std::mt19937 eng, double sigma) {
  std::uniform_real_distribution<double> d(1 - sigma, 1 + sigma);
  std::printf("seed %s sigma %.2f\n", label, sigma);
  for (int i = 0; i < 1000; i++) std::printf("%a\n", d(eng));
}

int main() {
  block("15", std::mt19937(15), 0.05);
  block("10", std::mt19937(10), 0.25);
  block("1", std::mt19937(1), 0.20);
  block("default", std::mt19937(), 0.15);
  block("4294967295", std::mt19937(4294967295u), 0.90);
}
