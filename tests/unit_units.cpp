#include <doctest/doctest.h>

#include <cmath>

#include "model/units.hpp"

using namespace ks;

TEST_CASE("sizes: decimal and binary prefixes, bytes and bits") {
  CHECK(parse_size_bytes("25MiB") == 25.0 * 1048576);  // 2^20
  CHECK(parse_size_bytes("1KiB") == 1024.0);
  CHECK(parse_size_bytes("2GiB") == 2.0 * 1073741824);
  CHECK(parse_size_bytes("1TiB") == 1099511627776.0);
  CHECK(parse_size_bytes("1.5GB") == 1.5e9);
  CHECK(parse_size_bytes("3kB") == 3000.0);
  CHECK(parse_size_bytes("7B") == 7.0);
  CHECK(parse_size_bytes("800Mb") == 100e6);  // 800e6 bits / 8
  CHECK(parse_size_bytes(" 4 MiB ") == 4.0 * 1048576);
}

TEST_CASE("rates: B/s, Bps, b/s, bps") {
  CHECK(parse_rate_Bps("12.5GB/s") == 12.5e9);
  CHECK(parse_rate_Bps("100Gbps") == 12.5e9);  // 100e9 / 8
  CHECK(parse_rate_Bps("100Gb/s") == 12.5e9);
  CHECK(parse_rate_Bps("41.3MBps") == doctest::Approx(41.3e6));
  CHECK(parse_rate_Bps("1GiB/s") == 1073741824.0);
}

TEST_CASE("times and FLOP rates") {
  CHECK(parse_time_s("5us") == doctest::Approx(5e-6).scale(0));
  CHECK(parse_time_s("1.5ms") == doctest::Approx(1.5e-3).scale(0));
  CHECK(parse_time_s("20ns") == doctest::Approx(2e-8).scale(0));
  CHECK(parse_time_s("2s") == 2.0);
  CHECK(parse_time_s("3min") == 180.0);
  CHECK(parse_time_s("2h") == 7200.0);
  CHECK(parse_flop_rate("19.5TFLOP/s") == doctest::Approx(19.5e12));
}

TEST_CASE("rejections: missing, unknown, wrong-case units and non-finite numbers") {
  CHECK_THROWS_WITH_AS(parse_size_bytes("25"), doctest::Contains("missing unit"), UnitError);
  CHECK_THROWS_WITH_AS(parse_size_bytes("25mib"), doctest::Contains("case-sensitive"), UnitError);
  CHECK_THROWS_WITH_AS(parse_size_bytes("25KB"), doctest::Contains("unknown unit \"KB\""), UnitError);
  CHECK_THROWS_WITH_AS(parse_rate_Bps("10GB"), doctest::Contains("unknown unit"), UnitError);  // a size is not a rate
  CHECK_THROWS_WITH_AS(parse_time_s("5sec"), doctest::Contains("unknown unit"), UnitError);
  CHECK_THROWS_WITH_AS(parse_time_s("5US"), doctest::Contains("unknown unit"), UnitError);
  CHECK_THROWS_WITH_AS(parse_size_bytes("nanMiB"), doctest::Contains("not a finite number"), UnitError);
  CHECK_THROWS_WITH_AS(parse_size_bytes("infB"), doctest::Contains("not a finite number"), UnitError);
  CHECK_THROWS_WITH_AS(parse_size_bytes("MiB"), doctest::Contains("does not start with a number"), UnitError);
  CHECK_THROWS_WITH_AS(parse_size_bytes(""), doctest::Contains("empty"), UnitError);
  CHECK_THROWS_AS(parse_size_bytes("0x10B"), UnitError);
  // Negative numbers parse; the config layer rejects them where a size must be positive.
  CHECK(parse_size_bytes("-1B") == -1.0);
}

TEST_CASE("formatting for tables") {
  CHECK(format_bytes(25.0 * 1048576) == "25.00 MiB");
  CHECK(format_bytes(512) == "512 B");
  CHECK(format_time(0.0025) == "2.500 ms");
  CHECK(format_time(5e-6) == "5.00 us");
  CHECK(format_rate(12.5e9) == "12.50 GB/s");
}
