# kanscale plot: Weak scaling: throughput per GPU (finisterrae3)
# Data: weak_throughput.dat (x, y, band lo, band hi, outer band lo, outer band hi; one block per series).
# Re-render: gnuplot weak_throughput.gp (writes weak_throughput.svg and weak_throughput.png)
# Bands: the central 90% interval over the calibration's Monte Carlo samples (fit covariances, jitter, model error); hatched: the scenario band, the envelope over the unknowns' ranges.
set terminal svg size 1200,720 dynamic noenhanced font 'sans,12' background rgb 'white'
set output 'weak_throughput.svg'
set title 'Weak scaling: throughput per GPU (finisterrae3)' noenhanced
set xlabel 'GPUs' noenhanced
set ylabel 'samples/s per GPU' noenhanced
set logscale x 2
set grid
set key outside right top vertical Left reverse noenhanced
set style fill transparent solid 0.18 noborder
set ytics ('200k' 200000, '220k' 220000, '240k' 240000, '260k' 260000, '280k' 280000, '300k' 300000, '320k' 320000)
array names[1]
names[1] = 'finisterrae3'
array dashes[1]
array colors[1]
dashes[1] = 1; colors[1] = 1
plot for [i=1:1] 'weak_throughput.dat' index (i-1) using 1:2 with linespoints pt 7 ps 0.6 lw 1.5 dt dashes[i] lc colors[i] title names[i]
set terminal pngcairo size 1200,720 noenhanced font 'sans,10' background rgb 'white'
set output 'weak_throughput.png'
replot
