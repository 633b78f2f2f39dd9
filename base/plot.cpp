#include "plot.hpp"
#include "output_files.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <iomanip>
#include <iostream>
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
  return os.str();
}

std::string gnuplot_script(const PlotSpec& p) {
  const std::string dat = quoted(p.name + ".dat", "name");
  std::ostringstream os;
  os << "# kanscale plot: " << p.title << "\n"
     << "# Data: " << p.name << ".dat (x, y, band lo, band hi, outer band lo, outer band hi; one block per series).\n"
     << "# Re-render: gnuplot " << p.name << ".gp (writes " << p.name << ".svg and " << p.name << ".png)\n";
  if (!p.note.empty()) os << "# " << p.note << "\n";
  os << "set terminal svg size 960,720 dynamic noenhanced font 'sans,12' background rgb 'white'\n"
     << "set output " << quoted(p.name + ".svg", "name") << "\n"
     << "set title " << quoted(p.title, "title") << " noenhanced\n"
     << (p.xlabel.empty() ? std::string("unset xlabel") : "set xlabel " + quoted(p.xlabel, "label") + " noenhanced") << "\n"
     << (p.ylabel.empty() ? std::string("unset ylabel") : "set ylabel " + quoted(p.ylabel, "label") + " noenhanced") << "\n"
     << axis_setup(p.x, "x") << axis_setup(p.y, "y")
     << "set grid\nset key below left Left reverse noenhanced\n"
     << "set style fill transparent solid 0.18 noborder\n";
  if (p.xmax > p.xmin) os << "set xrange [" << p.xmin << ":" << p.xmax << "]\n";
  if (p.xtic > 0) os << "set xtics " << p.xtic << "\n";
  if (!p.yticks.empty()) {
    os << "set ytics (";
    for (std::size_t i = 0; i < p.yticks.size(); ++i) os << (i ? ", " : "") << quoted(p.yticks[i].second, "tick") << " " << p.yticks[i].first;
    os << ")\nset yrange [" << p.yticks.front().first - 0.7 << ":" << p.yticks.back().first + 0.7 << "]\n";
  }
  const std::size_t n = p.series.size();
  if (n > 0) {
    os << "array names[" << n << "]\n";
    for (std::size_t i = 0; i < n; ++i) os << "names[" << i + 1 << "] = " << quoted(p.series[i].title, "series title") << "\n";
    os << "array dashes[" << n << "]\narray colors[" << n << "]\n";
    for (std::size_t i = 0; i < n; ++i)
      os << "dashes[" << i + 1 << "] = " << (p.series[i].dashed ? 2 : 1) << "; colors[" << i + 1
         << "] = " << (p.series[i].color > 0 ? p.series[i].color : static_cast<int>(i) + 1) << "\n";
  }
  bool bands = false;
  for (const auto& s : p.series)
    for (const auto& pt : s.points) bands |= std::isfinite(pt[2]) && std::isfinite(pt[3]);
  bool outer = false;
  for (const auto& s : p.series)
    for (const auto& o : s.outer) outer |= std::isfinite(o[0]) && std::isfinite(o[1]);
  std::vector<std::string> parts;
  if (n > 0 && p.spans) {  // a timeline: one bar per point, one colour per series
    parts.push_back("for [i=1:" + std::to_string(n) + "] " + dat +
                    " index (i-1) using 1:2:3:4:($2-0.35):($2+0.35) with boxxyerror fs solid 0.85 noborder lc colors[i] title names[i]");
    bands = outer = false;
  }
  if (n > 0 && outer && p.lines)  // the wider band first, fainter, beneath
    parts.push_back("for [i=1:" + std::to_string(n) + "] " + dat +
                    " index (i-1) using 1:5:6 with filledcurves fs transparent pattern 4 lc colors[i] notitle");
  if (n > 0 && bands)  // shaded along a line; error bars on a scatter
    parts.push_back("for [i=1:" + std::to_string(n) + "] " + dat +
                    (p.lines ? " index (i-1) using 1:3:4 with filledcurves lc colors[i] notitle"
                             : " index (i-1) using 1:2:3:4 with yerrorbars lc colors[i] pt 7 ps 0.8 notitle"));
  if (n > 0 && !p.spans)
    parts.push_back("for [i=1:" + std::to_string(n) + "] " + dat + " index (i-1) using 1:2 with " +
                    (p.lines ? "linespoints pt 7 ps 0.6 lw 1.5 dt dashes[i]" : "points pt 7 ps 0.8") + " lc colors[i] title names[i]");
  if (p.diagonal) parts.push_back("x with lines lc rgb 'gray40' dt 3 title " + quoted(p.diagonal_title.empty() ? "y = x" : p.diagonal_title, "title"));
  if (parts.empty()) parts.push_back("NaN notitle");
  os << "plot ";
  for (std::size_t i = 0; i < parts.size(); ++i) os << (i ? ", \\\n     " : "") << parts[i];
  os << "\n"
     << "set terminal pngcairo size 960,720 noenhanced font 'sans,10' background rgb 'white'\n"
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
