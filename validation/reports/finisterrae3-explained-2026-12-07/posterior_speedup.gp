# kanscale plot: Strong scaling, conditioned on the findings (finisterrae3, exposed overhead)
# Data: posterior_speedup.dat (x, y, band lo, band hi, outer band lo, outer band hi; one block per series; then the published figures).
# Re-render: gnuplot posterior_speedup.gp (writes posterior_speedup.svg and posterior_speedup.png)
# posterior predictive of kanscale study --infer at 2 GPUs per node
set terminal svg size 1200,720 dynamic noenhanced font 'sans,12' background rgb 'white'
set output 'posterior_speedup.svg'
set title 'Strong scaling, conditioned on the findings (finisterrae3, exposed overhead)' noenhanced
set xlabel 'GPUs' noenhanced
set ylabel 'speedup over 1 GPU' noenhanced
set logscale x 2
set logscale y 2
set grid
set key outside right top vertical Left reverse noenhanced
set style fill transparent solid 0.18 noborder
array names[2]
names[1] = 'every finding: median'
names[2] = 'without speedup: median'
array dashes[2]
array colors[2]
dashes[1] = 1; colors[1] = 1
dashes[2] = 2; colors[2] = 2
plot 'posterior_speedup.dat' index 0 using 1:3:4 with filledcurves lc colors[1] title '90 percent posterior band (shaded)', \
     'posterior_speedup.dat' index 1 using 1:3:4 with filledcurves fs transparent pattern 2 lc colors[2] title '90 percent posterior band (dashed lines, cross-hatched)', \
     for [i=1:2] 'posterior_speedup.dat' index (i-1) using 1:2 with linespoints pt 7 ps 0.6 lw 1.5 dt dashes[i] lc colors[i] title names[i], \
     'posterior_speedup.dat' index 2 using 1:2:3:4:5:6 with xyerrorbars pt 9 ps 1.8 lw 2 lc rgb 'black' title 'published', \
     x with lines lc rgb 'gray40' dt 3 title 'ideal'
set terminal pngcairo size 1200,720 noenhanced font 'sans,10' background rgb 'white'
set output 'posterior_speedup.png'
replot
