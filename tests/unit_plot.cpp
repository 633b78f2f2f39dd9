// Plots (base/plot) and study files (study/scenario): what reaches a gnuplot
// script, scripts that gnuplot renders or refuses, and how a study file
// expands into scenarios.
#include <doctest/doctest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <stdexcept>

#include "base/plot.hpp"
#include "formats/yaml_reader.hpp"
#include "study/scenario.hpp"
#include "temp_dir.hpp"

using namespace ks;

TEST_CASE("plot: names gnuplot would interpret are refused, before any script is written") {
  CHECK(plot_safe_name("dgx-a100 widths=64-256-1 bucket_cap=25.00 MiB"));
  CHECK(plot_safe_name("HDR200 (2x) [ring]"));
  CHECK(plot_safe_name("bucket_cap"));  // "_" is markup in enhanced text only, and every script turns that off
  for (const std::string bad : {"a`reboot`", "x $(id)", "it's", "a\"b", "50%", "a@b", "x^2", "{x}", "a\\b", "a&b", "~", "", "a\nb"}) {
    CAPTURE(bad);
    CHECK_FALSE(plot_safe_name(bad));
    PlotSpec p{"p", "title", "x", "y", Axis::log2, Axis::linear, true, false, "", "", {{bad, {{1, 1, NAN, NAN}}, false, 0}}};
    CHECK_THROWS_AS(gnuplot_script(p), std::invalid_argument);
  }
  PlotSpec named{"a;b", "t", "x", "y", Axis::linear, Axis::linear, true, false, "", "", {}};
  CHECK_THROWS_AS(gnuplot_script(named), std::invalid_argument);
}

TEST_CASE("plot: data blocks per series, bands only where given") {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  PlotSpec p{"s", "Speedup", "GPUs", "speedup", Axis::log2, Axis::log2, true, true, "ideal", "",
             {{"a", {{1, 1, nan, nan}, {2, 1.9, 1.8, 2.0}}, false, 0}, {"b", {}, true, 0}}};
  const std::string data = gnuplot_data(p);
  // block 1 has two rows (no outer band: NaN NaN), then two blank lines,
  // block 2 a placeholder row
  CHECK(data.find("1 1 NaN NaN NaN NaN\n2 1.9 1.8 2 NaN NaN\n\n\n") != std::string::npos);
  CHECK(data.find("NaN NaN NaN NaN NaN NaN\n") != std::string::npos);
  const std::string gp = gnuplot_script(p);
  CHECK(gp.find("with filledcurves") != std::string::npos);
  CHECK(gp.find("set logscale x 2") != std::string::npos);
  CHECK(gp.find("names[2] = 'b'") != std::string::npos);
  CHECK(gp.find("dashes[2] = 2") != std::string::npos);
  CHECK(gp.find("pattern") == std::string::npos);  // no outer band given
  // an outer band (a study's scenario band): columns 5 and 6, hatched beneath
  p.series[0].outer = {{nan, nan}, {1.5, 2.0}};
  CHECK(gnuplot_data(p).find("2 1.9 1.8 2 1.5 2\n") != std::string::npos);
  CHECK(gnuplot_script(p).find("using 1:5:6 with filledcurves fs transparent pattern") != std::string::npos);
  p.series[0].outer.clear();
  p.series[0].points[1] = {2, 1.9, nan, nan};
  CHECK(gnuplot_script(p).find("filledcurves") == std::string::npos);
}

TEST_CASE("plot: a key outside the data, a key entry per kind of band, published figures in the data, SI ticks") {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  PlotSpec p{"w", "Throughput", "GPUs", "samples/s per GPU", Axis::log2, Axis::linear, true, false, "", "",
             {{"solid", {{1, 400000, 390000, 410000}, {2, 500000, 480000, 520000}}, false, 0},
              {"dashed", {{1, 300000, 290000, 310000}, {2, 350000, 340000, 360000}}, true, 0}}};
  p.published = {{2, 450000, 2, 2, 440000, 460000}};
  p.published_title = "published, error bar its stated precision";
  p.xmarks = {{2, "batch per GPU 489 from N=2"}};
  const std::string gp = gnuplot_script(p), data = gnuplot_data(p);
  CHECK(gp.find("set key outside right top") != std::string::npos);
  // one key entry each for the solid line's band and the dashed line's
  // (cross-hatched, so that two bands stay apart), none twice
  CHECK(gp.find("title '90 percent interval (shaded)'") != std::string::npos);
  CHECK(gp.find("fs transparent pattern 2 lc colors[2] title '90 percent interval (dashed lines, cross-hatched)'") != std::string::npos);
  // the published figure: the third block, after the two series', with its error bar
  CHECK(data.find("\n\n\n# published figures") != std::string::npos);
  CHECK(data.find("2 450000 2 2 440000 460000\n") != std::string::npos);
  CHECK(gp.find("index 2 using 1:2:3:4:5:6 with xyerrorbars") != std::string::npos);
  CHECK(gp.find("title 'published, error bar its stated precision'") != std::string::npos);
  // y from 290,000 to 520,000: a span of 230k, about six ticks of a 1-2-5
  // step: 230k / 6 = 38k -> 50k, from 250k (290k floored) to 550k, labelled with SI prefixes
  CHECK(gp.find("set ytics ('250k' 250000, '300k' 300000, '350k' 350000, '400k' 400000, '450k' 450000, '500k' 500000, '550k' 550000)") !=
        std::string::npos);
  CHECK(gp.find("set xtics") == std::string::npos);  // 1 .. 2 GPUs: gnuplot's own numbers
  CHECK(gp.find("set arrow 1 from 2, graph 0 to 2, graph 1 nohead") != std::string::npos);
  CHECK(gp.find("set label 1 'batch per GPU 489 from N=2'") != std::string::npos);
  // SI labels by hand: 500000 = 500 x 10^3, 1.2 x 10^6, 12345 = 12.3 x 10^3 (3 significant digits)
  CHECK(si_label(500000) == "500k");
  CHECK(si_label(1200000) == "1.2M");
  CHECK(si_label(12345) == "12.3k");
  CHECK(si_label(2048) == "2048");
  CHECK(si_label(0.25) == "0.25");
  CHECK(si_label(3e9) == "3G");
  (void)nan;
}

TEST_CASE("plot: at most 8 series a panel: small multiples by panel, then in chunks; identical lines merge") {
  auto series = [](const std::string& t, double y, const std::string& panel) {
    return PlotSeries{t, {{1, y, NAN, NAN}, {2, 2 * y, NAN, NAN}}, false, 0, {}, panel};
  };
  PlotSpec p{"s", "Speedup", "GPUs", "speedup", Axis::log2, Axis::log2, true, true, "ideal", "", {}};
  for (int i = 0; i < 10; ++i) p.series.push_back(series("c" + std::to_string(i), i + 1, ""));
  auto panels = split_panels(p);  // 10 series, no panels: chunks of 8 and 2
  REQUIRE(panels.size() == 2);
  CHECK(panels[0].name == "s-1");
  CHECK(panels[0].series.size() == 8);
  CHECK(panels[1].series.size() == 2);
  CHECK(panels[1].title == "Speedup: part 2 of 2");
  for (int i = 0; i < 10; ++i) p.series[static_cast<std::size_t>(i)].panel = i < 5 ? "cluster a" : "cluster b";
  panels = split_panels(p);  // by panel: 5 and 5
  REQUIRE(panels.size() == 2);
  CHECK(panels[0].title == "Speedup: cluster a");
  CHECK(panels[1].series.front().title == "c5");
  p.series.resize(3);
  p.series[0].panel = p.series[1].panel = p.series[2].panel = "";
  CHECK(split_panels(p).size() == 1);  // within the limit: as it is
  CHECK(split_panels(p)[0].name == "s");
  // two series with the same points: one line named for both
  p.series[2] = series("c0 copy", 1, "");
  merge_identical_series(p);
  REQUIRE(p.series.size() == 2);
  CHECK(p.series[0].title == "c0 = c0 copy");
  // a script of a panel declares its series: at most 8
  const std::string gp = gnuplot_script(panels[0]);
  CHECK(gp.find("array names[5]") != std::string::npos);
}

TEST_CASE("plot: gnuplot renders a script, and a broken script fails the render with gnuplot's reason") {
  if (!in_path("gnuplot")) {
    MESSAGE("SKIPPED: gnuplot is not installed (Debian: gnuplot-nox); .ci/run installs it");
    return;
  }
  TempDir d;
  PlotSpec p{"ok", "Efficiency", "GPUs", "percent", Axis::log2, Axis::linear, true, false, "", "",
             {{"a", {{1, 100, 99, 100}, {2, 95, 93, 97}}, false, 0}}};
  std::ofstream(d / "ok.gp") << gnuplot_script(p);
  std::ofstream(d / "ok.dat") << gnuplot_data(p);
  CHECK_NOTHROW(render_plots(d.path, {"ok"}));
  CHECK(std::filesystem::file_size(d / "ok.svg") > 0);
  CHECK(std::filesystem::file_size(d / "ok.png") > 0);
  std::ofstream(d / "bad.gp") << "set terminal svg\nset output 'bad.svg'\nplot 'ok.dat' using 1:2 with linez\n";
  try {
    render_plots(d.path, {"bad"});
    FAIL("a broken script rendered");
  } catch (const std::runtime_error& e) {
    CHECK(std::string(e.what()).find("gnuplot failed on bad.gp") != std::string::npos);
  }
}

namespace {
std::string study_text(const std::string& sweep) {
  const std::string src = KANSCALE_SOURCE_DIR;
  return "name: t\nworkload: " + src + "/configs/workloads/default.yaml\nclusters:\n  - file: " + src +
         "/configs/clusters/dgx-a100.yaml\n  - file: " + src + "/configs/clusters/finisterrae3.yaml\n    label: ft3\nsweep:\n" + sweep;
}
}  // namespace

TEST_CASE("study file: clusters x sweep values, the last key fastest, labels naming what varies") {
  const StudySpec s = parse_study(study_text("  gpus: [1, 2, 8]\n  bucket_cap: [1MiB, 25MiB]\n  scaling: [strong]\n"), "t.yaml", 1e9);
  // 2 clusters x 2 caps x 1 scaling mode
  REQUIRE(s.scenarios.size() == 4);
  CHECK(s.scenarios[0].label == "dgx-a100 bucket_cap=1.00 MiB scaling=strong");
  CHECK(s.scenarios[1].label == "dgx-a100 bucket_cap=25.00 MiB scaling=strong");
  CHECK(s.scenarios[2].label == "ft3 bucket_cap=1.00 MiB scaling=strong");
  CHECK(s.scenarios[1].curve == "dgx-a100 bucket_cap=25.00 MiB");
  CHECK(s.scenarios[1].workload.ddp.bucket_cap_bytes == 25.0 * 1048576);
  CHECK(s.scenarios[2].cluster_config.name == "finisterrae3");
  CHECK(s.swept == std::vector<std::string>{"cluster", "bucket_cap", "scaling"});
  // default scaling: strong and weak
  const StudySpec both = parse_study(study_text("  gpus: [1, 2]\n"), "t.yaml", 1e9);
  REQUIRE(both.scenarios.size() == 4);
  CHECK(both.scenarios[0].options.scaling == Scaling::strong);
  CHECK(both.scenarios[1].options.scaling == Scaling::weak);
  // an NCCL restriction reaches the scenario's cluster
  const StudySpec algo = parse_study(study_text("  gpus: [1, 2]\n  nccl_algo: [all, tree]\n  scaling: [strong]\n"), "t.yaml", 1e9);
  REQUIRE(algo.scenarios.size() == 4);
  CHECK(algo.scenarios[0].cluster_config.collectives.algorithms.size() == 2);
  CHECK(algo.scenarios[1].cluster_config.collectives.algorithms == std::vector<Algo>{Algo::tree});
}

TEST_CASE("study file: the work of every scenario is checked before anything runs") {
  // 2 clusters x 2 modes, GPUs 1 + 16 (+ the 1-GPU baseline), 5 iterations
  CHECK_THROWS_WITH_AS(parse_study(study_text("  gpus: [1, 16]\n"), "t.yaml", 100), doctest::Contains("t.yaml:"), InputError);
  CHECK_NOTHROW(parse_study(study_text("  gpus: [1, 16]\n"), "t.yaml", 1e6));
}
