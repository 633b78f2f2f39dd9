#pragma once
// Plots as gnuplot scripts with their data beside them: a PlotSpec becomes a
// .gp script and a .dat file that a user can edit and re-run
// (`gnuplot NAME.gp` in the output directory renders NAME.svg and
// NAME.png). kanscale renders them by running gnuplot as a process, from an
// argument vector.
//
// gnuplot runs backticks (`cmd`) and system() in scripts and reads
// ^_{}@&~ as markup in enhanced text: every title that reaches a script is
// checked by plot_safe_name (refused otherwise), put in single quotes and
// shown with enhanced text off. File names in scripts are the spec's name
// only, which the same check guards.
#include <array>
#include <string>
#include <utility>
#include <vector>

namespace ks {

// Letters, digits, space and ._+-=:/,[]() only: nothing gnuplot reads as a
// command, a macro, a quote or markup.
bool plot_safe_name(const std::string& s);
// The characters plot_safe_name accepts, for error messages.
inline constexpr const char* kPlotSafeCharacters = "letters, digits, space and ._+-=:/,[]()";

struct PlotSeries {
  std::string title;
  // x, y, and the band's lo and hi (NaN: no band at that x)
  std::vector<std::array<double, 4>> points;
  bool dashed = false;
  int color = 0;  // gnuplot's line colour index; 0: the series' own position
  // a wider band around it, point by point (a study's scenario band over its
  // unknowns); empty or NaN: none
  std::vector<std::array<double, 2>> outer = {};
  // which panel of a set of small multiples it belongs to (split_panels); "": the one panel
  std::string panel = {};
};

// A published figure drawn as a point with its stated precision (or range)
// as error bars: x in [xlo, xhi], y in [lo, hi].
struct PlotMarker {
  double x = 0, y = 0, xlo = 0, xhi = 0, lo = 0, hi = 0;
};

enum class Axis { linear, log2, log10 };

struct PlotSpec {
  std::string name;  // file stem: NAME.gp, NAME.dat, NAME.svg, NAME.png
  std::string title, xlabel, ylabel;
  Axis x = Axis::linear, y = Axis::linear;
  bool lines = true;           // false: points only (a scatter), bands as error bars
  bool diagonal = false;       // the line y = x (ideal speedup; predicted = measured)
  std::string diagonal_title;  // its key entry
  std::string note;            // a comment line in the script (what the bands are)
  std::vector<PlotSeries> series;
  // spans (a timeline): each point is a bar at y = point[1] (a lane) from
  // x = point[2] to point[3]; point[0] is its middle. Bands do not apply.
  bool spans = false;
  // named ticks on the y axis (a timeline's lanes); empty: numbers
  std::vector<std::pair<double, std::string>> yticks = {};
  // the x axis's range and tick step (0: gnuplot's own)
  double xmin = 0, xmax = 0, xtic = 0;
  // the bands' key entries (one each, whichever series draws one first)
  std::string band_title = "90 percent interval", outer_title = "scenario range over the unknowns";
  // published figures (one key entry, published_title), written to the data
  // file after the series' blocks
  std::vector<PlotMarker> published = {};
  std::string published_title = "published";
  // vertical marks at x with a label (where the batch per GPU changes)
  std::vector<std::pair<double, std::string>> xmarks = {};
};

// At most this many series in one panel: more become small multiples.
inline constexpr std::size_t kMaxSeriesPerPanel = 8;

// The plot split into one panel per distinct PlotSeries::panel, in order of
// first appearance (NAME-1, NAME-2, ... with the panel's name in the
// title); a panel still holding more than kMaxSeriesPerPanel series is cut
// into chunks of that many. A plot within the limit comes back as it is.
std::vector<PlotSpec> split_panels(const PlotSpec& p);

// Series whose points are all equal become one, their titles joined with
// " = " (lines drawn over each other would hide each other).
void merge_identical_series(PlotSpec& p);

// A tick label with an SI prefix: 500000 -> "500k", 1200000 -> "1.2M",
// 0.25 -> "0.25" (no prefix below 1e4 in magnitude).
std::string si_label(double v);

// `s` with every character plot_safe_name refuses replaced by a space (for
// titles made of data, such as a case's label).
std::string plot_safe_text(std::string s);

// The data file: one block per series (x, y, lo, hi, outer lo, outer hi), blocks separated by
// two blank lines so that the script can address them with `index`.
std::string gnuplot_data(const PlotSpec& p);
// The script: SVG, then PNG, from NAME.dat. Throws std::invalid_argument
// when a title or the name fails plot_safe_name.
std::string gnuplot_script(const PlotSpec& p);

// Runs `gnuplot NAME.gp` in `dir` (its output to NAME.log there) for each
// name; throws std::runtime_error naming the script when gnuplot fails or
// writes no picture. Returns nothing: the pictures are in `dir`.
void render_plots(const std::string& dir, const std::vector<std::string>& names);

// After the results beside them are written: renders each NAME.gp in dir
// when gnuplot is in PATH; when it is not, or gnuplot fails, one line on
// stderr, starting with `who`, says so. Never throws for the pictures.
void render_plots_or_warn(const std::string& who, const std::string& dir, const std::vector<std::string>& names);

// Whether a program named `name` is found in PATH (as execvp looks it up).
bool in_path(const std::string& name);

}  // namespace ks
