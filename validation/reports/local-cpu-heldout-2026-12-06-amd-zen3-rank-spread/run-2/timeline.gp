# kanscale plot: rank 0, one steady iteration: np2 [48-96-96-1] G6 b3 cap 512.00 KiB shm
# Data: timeline.dat (x, y, band lo, band hi, outer band lo, outer band hi; one block per series).
# Re-render: gnuplot timeline.gp (writes timeline.svg and timeline.png)
# One bar per op or collective; lanes: simulated and live, compute and communication.
set terminal svg size 1200,720 dynamic noenhanced font 'sans,12' background rgb 'white'
set output 'timeline.svg'
set title 'rank 0, one steady iteration: np2 [48-96-96-1] G6 b3 cap 512.00 KiB shm' noenhanced
set xlabel 'time from the start of the iteration (ms)' noenhanced
unset ylabel
set grid
set key outside right top vertical Left reverse noenhanced
set style fill transparent solid 0.18 noborder
set ytics ('live comm' 1, 'live compute' 2, 'simulated comm' 3, 'simulated compute' 4)
set yrange [0.3:4.7]
array names[7]
names[1] = 'forward'
names[2] = 'backward'
names[3] = 'gradient copies'
names[4] = 'all-reduce'
names[5] = 'waiting'
names[6] = 'Adam'
names[7] = 'other'
array dashes[7]
array colors[7]
dashes[1] = 1; colors[1] = 2
dashes[2] = 1; colors[2] = 3
dashes[3] = 1; colors[3] = 5
dashes[4] = 1; colors[4] = 7
dashes[5] = 1; colors[5] = 9
dashes[6] = 1; colors[6] = 4
dashes[7] = 1; colors[7] = 8
plot for [i=1:7] 'timeline.dat' index (i-1) using 1:2:3:4:($2-0.35):($2+0.35) with boxxyerror fs solid 0.85 noborder lc colors[i] title names[i]
set terminal pngcairo size 1200,720 noenhanced font 'sans,10' background rgb 'white'
set output 'timeline.png'
replot
