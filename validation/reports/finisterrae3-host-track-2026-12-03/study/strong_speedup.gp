# kanscale plot: Strong scaling: speedup (finisterrae3)
# Data: strong_speedup.dat (x, y, band lo, band hi, outer band lo, outer band hi; one block per series; then the published figures).
# Re-render: gnuplot strong_speedup.gp (writes strong_speedup.svg and strong_speedup.png)
# Bands: the central 90% interval over the calibration's Monte Carlo samples (fit covariances, jitter, model error); hatched: the scenario band, the envelope over the unknowns' ranges. Published figures: arXiv 2609.07740, Scalability Analysis of Distributed Kolmogorov-Arnold Network Training on HPC Systems (abstract).
set terminal svg size 1200,720 dynamic noenhanced font 'sans,12' background rgb 'white'
set output 'strong_speedup.svg'
set title 'Strong scaling: speedup (finisterrae3)' noenhanced
set xlabel 'GPUs' noenhanced
set ylabel 'speedup over 1 GPU' noenhanced
set logscale x 2
set logscale y 2
set grid
set key outside right top vertical Left reverse noenhanced
set style fill transparent solid 0.18 noborder
array names[1]
names[1] = 'finisterrae3'
array dashes[1]
array colors[1]
dashes[1] = 1; colors[1] = 1
plot 'strong_speedup.dat' index 0 using 1:5:6 with filledcurves fs transparent pattern 4 lc colors[1] title 'scenario range over the unknowns (hatched)', \
     for [i=1:1] 'strong_speedup.dat' index (i-1) using 1:2 with linespoints pt 7 ps 0.6 lw 1.5 dt dashes[i] lc colors[i] title names[i], \
     'strong_speedup.dat' index 1 using 1:2:3:4:5:6 with xyerrorbars pt 9 ps 1.8 lw 2 lc rgb 'black' title 'published, error bar its stated precision', \
     x with lines lc rgb 'gray40' dt 3 title 'ideal'
set terminal pngcairo size 1200,720 noenhanced font 'sans,10' background rgb 'white'
set output 'strong_speedup.png'
replot
