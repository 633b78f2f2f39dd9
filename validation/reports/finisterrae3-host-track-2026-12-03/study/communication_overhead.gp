# kanscale plot: Communication overhead (finisterrae3)
# Data: communication_overhead.dat (x, y, band lo, band hi, outer band lo, outer band hi; one block per series; then the published figures).
# Re-render: gnuplot communication_overhead.gp (writes communication_overhead.svg and communication_overhead.png)
# Bands: the central 90% interval over the calibration's Monte Carlo samples (fit covariances, jitter, model error); hatched: the scenario band, the envelope over the unknowns' ranges. Published figures: arXiv 2609.07740, Scalability Analysis of Distributed Kolmogorov-Arnold Network Training on HPC Systems (abstract).
set terminal svg size 1200,720 dynamic noenhanced font 'sans,12' background rgb 'white'
set output 'communication_overhead.svg'
set title 'Communication overhead (finisterrae3)' noenhanced
set xlabel 'GPUs' noenhanced
set ylabel 'communication / iteration (percent): exposed solid, total dashed' noenhanced
set logscale x 2
set grid
set key outside right top vertical Left reverse noenhanced
set style fill transparent solid 0.18 noborder
array names[2]
names[1] = 'finisterrae3 exposed'
names[2] = 'finisterrae3 total'
array dashes[2]
array colors[2]
dashes[1] = 1; colors[1] = 1
dashes[2] = 2; colors[2] = 1
plot 'communication_overhead.dat' index 0 using 1:5:6 with filledcurves fs transparent pattern 4 lc colors[1] title 'scenario range over the unknowns (hatched)', \
     'communication_overhead.dat' index 1 using 1:5:6 with filledcurves fs transparent pattern 5 lc colors[2] title 'scenario range over the unknowns (dashed lines, hatched)', \
     for [i=1:2] 'communication_overhead.dat' index (i-1) using 1:2 with linespoints pt 7 ps 0.6 lw 1.5 dt dashes[i] lc colors[i] title names[i], \
     'communication_overhead.dat' index 2 using 1:2:3:4:5:6 with xyerrorbars pt 9 ps 1.8 lw 2 lc rgb 'black' title 'published: the overhead range over 2 to 8 GPUs'
set terminal pngcairo size 1200,720 noenhanced font 'sans,10' background rgb 'white'
set output 'communication_overhead.png'
replot
