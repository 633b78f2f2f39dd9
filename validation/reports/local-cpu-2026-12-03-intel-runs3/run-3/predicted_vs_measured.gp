# kanscale plot: Predicted against measured iteration time
# Data: predicted_vs_measured.dat (x, y, band lo, band hi, outer band lo, outer band hi; one block per series).
# Re-render: gnuplot predicted_vs_measured.gp (writes predicted_vs_measured.svg and predicted_vs_measured.png)
# Error bars: the prediction's interval (where the calibration has measured uncertainty).
set terminal svg size 960,720 dynamic noenhanced font 'sans,12' background rgb 'white'
set output 'predicted_vs_measured.svg'
set title 'Predicted against measured iteration time' noenhanced
set xlabel 'measured iteration (ms)' noenhanced
set ylabel 'predicted iteration (ms), with its interval' noenhanced
set logscale x 10
set logscale y 10
set grid
set key below left Left reverse noenhanced
set style fill transparent solid 0.18 noborder
array names[3]
names[1] = '1 rank'
names[2] = 'several ranks'
names[3] = 'oversubscribed (not judged)'
array dashes[3]
array colors[3]
dashes[1] = 1; colors[1] = 1
dashes[2] = 1; colors[2] = 2
dashes[3] = 1; colors[3] = 3
plot for [i=1:3] 'predicted_vs_measured.dat' index (i-1) using 1:2:3:4 with yerrorbars lc colors[i] pt 7 ps 0.8 notitle, \
     for [i=1:3] 'predicted_vs_measured.dat' index (i-1) using 1:2 with points pt 7 ps 0.8 lc colors[i] title names[i], \
     x with lines lc rgb 'gray40' dt 3 title 'predicted = measured'
set terminal pngcairo size 960,720 noenhanced font 'sans,10' background rgb 'white'
set output 'predicted_vs_measured.png'
replot
