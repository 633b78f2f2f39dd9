# kanscale plot: Measured iteration time per case, each run against the geometric mean of the runs
# Data: repeatability.dat (x, y, band lo, band hi, outer band lo, outer band hi; one block per series).
# Re-render: gnuplot repeatability.gp (writes repeatability.svg and repeatability.png)
# One point per run and case.
set terminal svg size 960,720 dynamic noenhanced font 'sans,12' background rgb 'white'
set output 'repeatability.svg'
set title 'Measured iteration time per case, each run against the geometric mean of the runs' noenhanced
set xlabel 'case (in the order of the table in the report)' noenhanced
set ylabel 'measured / geometric mean of the runs - 1 (percent)' noenhanced
set grid
set key below left Left reverse noenhanced
set style fill transparent solid 0.18 noborder
set xrange [0.5:120.5]
array names[2]
names[1] = 'run 1'
names[2] = 'run 2'
array dashes[2]
array colors[2]
dashes[1] = 1; colors[1] = 1
dashes[2] = 1; colors[2] = 2
plot for [i=1:2] 'repeatability.dat' index (i-1) using 1:2 with points pt 7 ps 0.8 lc colors[i] title names[i]
set terminal pngcairo size 960,720 noenhanced font 'sans,10' background rgb 'white'
set output 'repeatability.png'
replot
