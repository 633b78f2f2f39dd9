#include "plot.hpp"
#include "output_files.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <iterator>
#include <cstdlib>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <limits>
#include <map>
#include <set>
#include <sstream>
#include <stdexcept>

#include "process.hpp"

namespace ks {

bool plot_safe_name(const std::string& s) {
  if (s.empty()) return false;
  for (unsigned char ch : s) {
    const bool ok = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
                    std::string(" ._+-=:/,[]()").find(static_cast<char>(ch)) != std::string::npos;
    if (!ok) return false;
  }
  return true;
}

std::string plot_safe_text(std::string s) {
  for (char& ch : s)
    if (!plot_safe_name(std::string(1, ch))) ch = ' ';
  return s;
}

namespace {

std::string quoted(const std::string& s, const char* what) {
  if (!plot_safe_name(s)) throw std::invalid_argument(std::string("plot ") + what + " \"" + s + "\": expected " + kPlotSafeCharacters);
  return "'" + s + "'";
}

void number(std::ostream& os, double v) {
  if (std::isfinite(v))
    os << v;
  else
    os << "NaN";
}

std::string axis_setup(Axis a, const char* which) {
  switch (a) {
    case Axis::log2: return std::string("set logscale ") + which + " 2\n";
    case Axis::log10: return std::string("set logscale ") + which + " 10\n";
    case Axis::linear: break;
  }
  return "";
}

}  // namespace

std::string gnuplot_data(const PlotSpec& p) {
  std::ostringstream os;
  os << std::setprecision(10);
  os << "# " << p.name << ": one block per series (x, y, band lo, band hi, outer band lo, outer band hi; NaN: none)\n";
  for (std::size_t s = 0; s < p.series.size(); ++s) {
    if (s) os << "\n\n";
    os << "# series " << s + 1 << ": " << p.series[s].title << "\n";
    const auto& ser = p.series[s];
    for (std::size_t k = 0; k < ser.points.size(); ++k) {
      const auto& pt = ser.points[k];
      for (int i = 0; i < 4; ++i) {
        if (i) os << " ";
        number(os, pt[static_cast<std::size_t>(i)]);
      }
      for (int i = 0; i < 2; ++i) {
        os << " ";
        number(os, k < ser.outer.size() ? ser.outer[k][static_cast<std::size_t>(i)] : std::nan(""));
      }
      os << "\n";
    }
    if (ser.points.empty()) os << "NaN NaN NaN NaN NaN NaN\n";  // keeps the block count
  }
  if (!p.published.empty()) {
    os << "\n\n# published figures: x, y, x lo, x hi, y lo, y hi (" << p.published_title << ")\n";
    for (const PlotMarker& m : p.published) {
      const double v[] = {m.x, m.y, m.xlo, m.xhi, m.lo, m.hi};
      for (std::size_t i = 0; i < 6; ++i) {
        if (i) os << " ";
        number(os, v[i]);
      }
      os << "\n";
    }
  }
  return os.str();
}

namespace {

// The data's extent on one axis (points, bands, published figures); NaN
// when there is none.
std::pair<double, double> data_range(const PlotSpec& p, bool y) {
  double lo = std::numeric_limits<double>::infinity(), hi = -lo;
  auto take = [&](double v) {
    if (std::isfinite(v)) lo = std::min(lo, v), hi = std::max(hi, v);
  };
  for (const auto& s : p.series) {
    for (const auto& pt : s.points) {
      if (y)
        for (int i : {1, 2, 3}) take(pt[static_cast<std::size_t>(i)]);
      else
        take(pt[0]);
    }
    if (y)
      for (const auto& o : s.outer) take(o[0]), take(o[1]);
  }
  for (const auto& m : p.published) {
    if (y)
      take(m.lo), take(m.hi), take(m.y);
    else
      take(m.xlo), take(m.xhi), take(m.x);
  }
  if (!(lo <= hi)) return {std::nan(""), std::nan("")};
  return {lo, hi};
}

// Ticks with SI-prefixed labels for an axis whose data reach 1e4 or more
// ("" otherwise: gnuplot's own numbers read fine): powers of the log base
// on a log axis, 1-2-5 steps (about six ticks) on a linear one.
std::string si_ticks(const PlotSpec& p, Axis a, bool y) {
  const auto [lo, hi] = data_range(p, y);
  if (!std::isfinite(hi) || std::max(std::fabs(lo), std::fabs(hi)) < 1e4) return "";
  std::vector<double> ticks;
  if (a != Axis::linear) {
    const double base = a == Axis::log2 ? 2 : 10;
    if (lo <= 0) return "";
    for (double t = std::pow(base, std::floor(std::log(lo) / std::log(base))); t <= hi * base * 1.0000001; t *= base) ticks.push_back(t);
  } else {
    // over the data's own range (gnuplot autoscales to it, not to 0)
    const double from = lo, span = hi - from;
    if (!(span > 0)) return "";
    const double raw = span / 6, mag = std::pow(10, std::floor(std::log10(raw)));
    const double step = raw <= mag ? mag : raw <= 2 * mag ? 2 * mag : raw <= 5 * mag ? 5 * mag : 10 * mag;
    for (double t = std::floor(from / step) * step; t <= hi + step * 0.999; t += step) ticks.push_back(t);
  }
  if (ticks.size() < 2 || ticks.size() > 40) return "";
  std::ostringstream os;
  os << std::setprecision(12) << "set " << (y ? "y" : "x") << "tics (";
  // powers of two (GPU counts) read best whole: 16384, not 16.4k
  for (std::size_t i = 0; i < ticks.size(); ++i) {
    std::ostringstream label;
    label << std::setprecision(12) << ticks[i];
    os << (i ? ", " : "") << "'" << (a == Axis::log2 ? label.str() : si_label(ticks[i])) << "' " << ticks[i];
  }
  os << ")\n";
  return os.str();
}

}  // namespace

std::string si_label(double v) {
  static const std::pair<double, const char*> kPrefixes[] = {{1e15, "P"}, {1e12, "T"}, {1e9, "G"}, {1e6, "M"}, {1e3, "k"}};
  const double a = std::fabs(v);
  std::ostringstream os;
  if (a >= 1e4) {
    for (std::size_t i = 0; i < std::size(kPrefixes); ++i) {
      const auto& [scale, prefix] = kPrefixes[i];
      if (a < scale) continue;
      std::ostringstream m;
      m << std::setprecision(3) << v / scale;
      // 999,500 rounds to 1000k: one prefix up
      if (i > 0 && std::fabs(std::stod(m.str())) >= 1000) {
        os << std::setprecision(3) << v / kPrefixes[i - 1].first << kPrefixes[i - 1].second;
        return os.str();
      }
      os << m.str() << prefix;
      return os.str();
    }
  }
  os << std::setprecision(6) << v;
  return os.str();
}

std::vector<PlotSpec> split_panels(const PlotSpec& p) {
  bool panels = false;
  for (const auto& s : p.series) panels |= !s.panel.empty();
  if (p.series.size() <= kMaxSeriesPerPanel && !panels) return {p};
  // by panel, in order of first appearance; each cut into chunks of the limit
  std::vector<std::string> order;
  std::map<std::string, std::vector<std::size_t>> members;
  for (std::size_t i = 0; i < p.series.size(); ++i) {
    if (!members.count(p.series[i].panel)) order.push_back(p.series[i].panel);
    members[p.series[i].panel].push_back(i);
  }
  std::vector<PlotSpec> out;
  for (const auto& panel : order) {
    const auto& idx = members[panel];
    const std::size_t chunks = (idx.size() + kMaxSeriesPerPanel - 1) / kMaxSeriesPerPanel;
    for (std::size_t c = 0; c < chunks; ++c) {
      PlotSpec q = p;
      q.series.clear();
      for (std::size_t k = c * kMaxSeriesPerPanel; k < std::min(idx.size(), (c + 1) * kMaxSeriesPerPanel); ++k) {
        q.series.push_back(p.series[idx[k]]);
        q.series.back().color = 0;  // colours count within the panel
        // the panel's title names what its series share: their titles need not
        std::string& t = q.series.back().title;
        if (!panel.empty())
          for (std::size_t at; (at = t.find(panel)) != std::string::npos;) {
            const std::size_t from = at > 0 && t[at - 1] == ' ' ? at - 1 : at;
            t.erase(from, at - from + panel.size());
          }
        while (!t.empty() && t.front() == ' ') t.erase(t.begin());
        if (t.empty()) t = panel;
      }
      // a pair sharing a colour (exposed and total) keeps sharing one
      for (std::size_t k = 0; k < q.series.size(); ++k) {
        const int old = p.series[idx[c * kMaxSeriesPerPanel + k]].color;
        if (old <= 0) continue;
        int first = 0;
        for (std::size_t m = 0; m < k && !first; ++m)
          if (p.series[idx[c * kMaxSeriesPerPanel + m]].color == old) first = q.series[m].color > 0 ? q.series[m].color : static_cast<int>(m) + 1;
        q.series[k].color = first ? first : static_cast<int>(k) + 1;
      }
      q.name = p.name + "-" + std::to_string(out.size() + 1);
      std::string what = panel;
      if (chunks > 1) what += (what.empty() ? "" : ", ") + std::string("part ") + std::to_string(c + 1) + " of " + std::to_string(chunks);
      if (!what.empty()) q.title = p.title + ": " + what;
      out.push_back(std::move(q));
    }
  }
  return out;
}

void merge_identical_series(PlotSpec& p) {
  std::vector<PlotSeries> kept;
  for (auto& s : p.series) {
    bool merged = false;
    for (auto& k : kept) {
      if (k.panel == s.panel && k.dashed == s.dashed && k.points.size() == s.points.size() && k.outer.size() == s.outer.size()) {
        auto eq = [](double a, double b) { return a == b || (std::isnan(a) && std::isnan(b)); };
        bool same = true;
        for (std::size_t i = 0; i < s.points.size() && same; ++i)
          for (std::size_t c = 0; c < 4 && same; ++c) same = eq(k.points[i][c], s.points[i][c]);
        for (std::size_t i = 0; i < s.outer.size() && same; ++i) same = eq(k.outer[i][0], s.outer[i][0]) && eq(k.outer[i][1], s.outer[i][1]);
        if (same) {
          k.title += " = " + s.title;
          merged = true;
          break;
        }
      }
    }
    if (!merged) kept.push_back(std::move(s));
  }
  p.series = std::move(kept);
}

std::string gnuplot_script(const PlotSpec& p) {
  const std::string dat = quoted(p.name + ".dat", "name");
  std::ostringstream os;
  os << "# kanscale plot: " << p.title << "\n"
     << "# Data: " << p.name << ".dat (x, y, band lo, band hi, outer band lo, outer band hi; one block per series"
     << (p.published.empty() ? "" : "; then the published figures") << ").\n"
     << "# Re-render: gnuplot " << p.name << ".gp (writes " << p.name << ".svg and " << p.name << ".png)\n";
  if (!p.note.empty()) os << "# " << p.note << "\n";
  // the key sits outside the data, to the right of the plot
  os << "set terminal svg size 1200,720 dynamic noenhanced font 'sans,12' background rgb 'white'\n"
     << "set output " << quoted(p.name + ".svg", "name") << "\n"
     << "set title " << quoted(p.title, "title") << " noenhanced\n"
     << (p.xlabel.empty() ? std::string("unset xlabel") : "set xlabel " + quoted(p.xlabel, "label") + " noenhanced") << "\n"
     << (p.ylabel.empty() ? std::string("unset ylabel") : "set ylabel " + quoted(p.ylabel, "label") + " noenhanced") << "\n"
     << axis_setup(p.x, "x") << axis_setup(p.y, "y")
     << "set grid\nset key outside right top vertical Left reverse noenhanced\n"
     << "set style fill transparent solid 0.18 noborder\n";
  if (p.xmax > p.xmin) os << "set xrange [" << p.xmin << ":" << p.xmax << "]\n";
  if (p.xtic > 0) os << "set xtics " << p.xtic << "\n";
  if (!p.spans && p.xtic <= 0) os << si_ticks(p, p.x, false);
  if (!p.yticks.empty()) {
    os << "set ytics (";
    for (std::size_t i = 0; i < p.yticks.size(); ++i) os << (i ? ", " : "") << quoted(p.yticks[i].second, "tick") << " " << p.yticks[i].first;
    os << ")\nset yrange [" << p.yticks.front().first - 0.7 << ":" << p.yticks.back().first + 0.7 << "]\n";
  } else if (!p.spans) {
    os << si_ticks(p, p.y, true);
  }
  os << std::setprecision(12);
  // a mark's label on an opaque box: readable where a curve passes under it
  if (!p.xmarks.empty()) os << "set style textbox opaque noborder\n";
  for (std::size_t i = 0; i < p.xmarks.size(); ++i) {
    const auto& [x, text] = p.xmarks[i];
    os << "set arrow " << i + 1 << " from " << x << ", graph 0 to " << x << ", graph 1 nohead dt 4 lw 1.2 lc rgb 'gray30'\n"
       << "set label " << i + 1 << " " << quoted(text, "mark") << " at " << x << ", graph " << 0.04 + 0.05 * static_cast<double>(i)
       << " right offset -0.5,0 font ',10' noenhanced front boxed\n";
  }
  const std::size_t n = p.series.size();
  if (n > 0) {
    os << "array names[" << n << "]\n";
    // a key entry of at most 60 characters (gnuplot drops a key it cannot fit
    // beside the plot); the data file's block comment keeps the whole title
    for (std::size_t i = 0; i < n; ++i) {
      const std::string& t = p.series[i].title;
      os << "names[" << i + 1 << "] = " << quoted(t.size() > 60 ? t.substr(0, 57) + "..." : t, "series title") << "\n";
    }
    os << "array dashes[" << n << "]\narray colors[" << n << "]\n";
    for (std::size_t i = 0; i < n; ++i)
      os << "dashes[" << i + 1 << "] = " << (p.series[i].dashed ? 2 : 1) << "; colors[" << i + 1
         << "] = " << (p.series[i].color > 0 ? p.series[i].color : static_cast<int>(i) + 1) << "\n";
  }
  auto has_band = [](const PlotSeries& s) {
    for (const auto& pt : s.points)
      if (std::isfinite(pt[2]) && std::isfinite(pt[3])) return true;
    return false;
  };
  auto has_outer = [](const PlotSeries& s) {
    for (const auto& o : s.outer)
      if (std::isfinite(o[0]) && std::isfinite(o[1])) return true;
    return false;
  };
  // one key entry per kind of band and fill: solid lines' bands filled,
  // dashed lines' hatched, so that two bands of one colour stay apart
  std::set<std::string> entries;
  auto entry = [&](const std::string& title) {
    if (!entries.insert(title).second) return std::string("notitle");
    return "title " + quoted(title, "band title");
  };
  std::vector<std::string> parts;
  if (n > 0 && p.spans)  // a timeline: one bar per point, one colour per series
    parts.push_back("for [i=1:" + std::to_string(n) + "] " + dat +
                    " index (i-1) using 1:2:3:4:($2-0.35):($2+0.35) with boxxyerror fs solid 0.85 noborder lc colors[i] title names[i]");
  for (std::size_t i = 0; i < n && !p.spans && p.lines; ++i) {  // the wider band first, beneath
    if (!has_outer(p.series[i])) continue;
    const bool d = p.series[i].dashed;
    parts.push_back(dat + " index " + std::to_string(i) + " using 1:5:6 with filledcurves fs transparent pattern " + (d ? "5" : "4") +
                    " lc colors[" + std::to_string(i + 1) + "] " + entry(p.outer_title + (d ? " (dashed lines, hatched)" : " (hatched)")));
  }
  for (std::size_t i = 0; i < n && !p.spans; ++i) {
    if (!has_band(p.series[i])) continue;
    const bool d = p.series[i].dashed;
    const std::string k = std::to_string(i + 1);
    if (p.lines)
      parts.push_back(dat + " index " + std::to_string(i) + " using 1:3:4 with filledcurves " +
                      (d ? std::string("fs transparent pattern 2 ") : std::string("")) + "lc colors[" + k + "] " +
                      entry(p.band_title + (d ? " (dashed lines, cross-hatched)" : " (shaded)")));
    else
      parts.push_back(dat + " index " + std::to_string(i) + " using 1:2:3:4 with yerrorbars lc colors[" + k + "] pt 7 ps 0.8 " +
                      entry(p.band_title + " (error bars)"));
  }
  if (n > 0 && !p.spans)
    parts.push_back("for [i=1:" + std::to_string(n) + "] " + dat + " index (i-1) using 1:2 with " +
                    (p.lines ? "linespoints pt 7 ps 0.6 lw 1.5 dt dashes[i]" : "points pt 7 ps 0.8") + " lc colors[i] title names[i]");
  if (!p.published.empty())
    parts.push_back(dat + " index " + std::to_string(n) + " using 1:2:3:4:5:6 with xyerrorbars pt 9 ps 1.8 lw 2 lc rgb 'black' title " +
                    quoted(p.published_title, "published title"));
  if (p.diagonal) parts.push_back("x with lines lc rgb 'gray40' dt 3 title " + quoted(p.diagonal_title.empty() ? "y = x" : p.diagonal_title, "title"));
  if (parts.empty()) parts.push_back("NaN notitle");
  os << "plot ";
  for (std::size_t i = 0; i < parts.size(); ++i) os << (i ? ", \\\n     " : "") << parts[i];
  os << "\n"
     << "set terminal pngcairo size 1200,720 noenhanced font 'sans,10' background rgb 'white'\n"
     << "set output " << quoted(p.name + ".png", "name") << "\n"
     << "replot\n";
  return os.str();
}

bool in_path(const std::string& name) {
  const char* path = std::getenv("PATH");
  if (!path) return false;
  std::stringstream ss(path);
  std::string dir;
  while (std::getline(ss, dir, ':')) {
    if (dir.empty()) dir = ".";
    const std::string f = dir + "/" + name;
    struct stat st {};
    if (stat(f.c_str(), &st) == 0 && S_ISREG(st.st_mode) && access(f.c_str(), X_OK) == 0) return true;
  }
  return false;
}

void render_plots(const std::string& dir, const std::vector<std::string>& names) {
  std::vector<std::string> made_here;
  for (const auto& name : names) made_here.insert(made_here.end(), {name + ".svg", name + ".png", name + ".log"});
  record_outputs(dir, made_here);  // before gnuplot writes them: the directory holds only what it lists
  for (const auto& name : names) {
    ProcessSpec ps;
    ps.argv = {"gnuplot", name + ".gp"};
    ps.cwd = dir;
    ps.log_path = name + ".log";
    const int rc = run_process(ps);
    struct stat st {};
    const bool made = stat((dir + "/" + name + ".svg").c_str(), &st) == 0 && st.st_size > 0 &&
                      stat((dir + "/" + name + ".png").c_str(), &st) == 0 && st.st_size > 0;
    if (rc != 0 || !made) {
      // the log's last line says why (the directory may not outlive the error)
      std::ifstream log(dir + "/" + name + ".log");
      std::string line, last;
      while (std::getline(log, line))
        if (!line.empty()) last = line;
      throw std::runtime_error("gnuplot failed on " + name + ".gp (exit " + std::to_string(rc) + ")" + (last.empty() ? "" : ": " + last));
    }
    // gnuplot's warnings stay in the log; an empty log is removed
    if (stat((dir + "/" + name + ".log").c_str(), &st) == 0 && st.st_size == 0) unlink((dir + "/" + name + ".log").c_str());
  }
}

void render_plots_or_warn(const std::string& who, const std::string& dir, const std::vector<std::string>& names) {
  if (!in_path("gnuplot")) {
    std::cerr << who << ": gnuplot is not in PATH (Debian: gnuplot-nox): the plots' .gp scripts in " << dir
              << " are written but not rendered\n";
    return;
  }
  try {
    render_plots(dir, names);
  } catch (const std::exception& e) {
    std::cerr << who << ": " << e.what() << " (the results are written)\n";
  }
}

}  // namespace ks
