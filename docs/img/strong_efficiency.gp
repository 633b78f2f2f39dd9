# kanscale plot: Strong scaling: parallel efficiency (topology)
# Data: strong_efficiency.dat (x, y, band lo, band hi, outer band lo, outer band hi; one block per series).
# Re-render: gnuplot strong_efficiency.gp (writes strong_efficiency.svg and strong_efficiency.png)
# Bands: the central 90% interval over the calibration's Monte Carlo samples (fit covariances, jitter, model error).
set terminal svg size 1200,720 dynamic noenhanced font 'sans,12' background rgb 'white'
set output 'strong_efficiency.svg'
set title 'Strong scaling: parallel efficiency (topology)' noenhanced
set xlabel 'GPUs' noenhanced
set ylabel 'parallel efficiency (percent)' noenhanced
set logscale x 2
set grid
set key outside right top vertical Left reverse noenhanced
set style fill transparent solid 0.18 noborder
set style textbox opaque noborder
set arrow 1 from 1024, graph 0 to 1024, graph 1 nohead dt 4 lw 1.2 lc rgb 'gray30'
set label 1 'batch per GPU below the workload from N=1024 (977)' at 1024, graph 0.04 right offset -0.5,0 font ',10' noenhanced front boxed
array names[4]
names[1] = 'nvlink network.inter_bandwidth=0.5x'
names[2] = 'nvlink network.inter_bandwidth=1x'
names[3] = 'nvlink network.inter_bandwidth=2x'
names[4] = 'pcie network.inter_bandwidth=0.5x = pcie network.inter_ba...'
array dashes[4]
array colors[4]
dashes[1] = 1; colors[1] = 1
dashes[2] = 1; colors[2] = 2
dashes[3] = 1; colors[3] = 3
dashes[4] = 1; colors[4] = 4
plot for [i=1:4] 'strong_efficiency.dat' index (i-1) using 1:2 with linespoints pt 7 ps 0.6 lw 1.5 dt dashes[i] lc colors[i] title names[i]
set terminal pngcairo size 1200,720 noenhanced font 'sans,10' background rgb 'white'
set output 'strong_efficiency.png'
replot
