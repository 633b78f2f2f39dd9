# kanscale plot: Predicted against measured iteration time
# Data: predicted_vs_measured.dat (x, y, band lo, band hi, outer band lo, outer band hi; one block per series).
# Re-render: gnuplot predicted_vs_measured.gp (writes predicted_vs_measured.svg and predicted_vs_measured.png)
# Error bars: the prediction's interval (where the calibration has measured uncertainty).
set terminal svg size 1200,720 dynamic noenhanced font 'sans,12' background rgb 'white'
set output 'predicted_vs_measured.svg'
set title 'Predicted against measured iteration time' noenhanced
set xlabel 'measured iteration (ms)' noenhanced
set ylabel 'predicted iteration (ms), with its interval' noenhanced
set logscale x 10
set logscale y 10
set grid
set key outside right top vertical Left reverse noenhanced
set style fill transparent solid 0.18 noborder
array names[1]
names[1] = '1 rank'
array dashes[1]
array colors[1]
dashes[1] = 1; colors[1] = 1
plot 'predicted_vs_measured.dat' index 0 using 1:2:3:4 with yerrorbars lc colors[1] pt 7 ps 0.8 title '90 percent interval (error bars)', \
     for [i=1:1] 'predicted_vs_measured.dat' index (i-1) using 1:2 with points pt 7 ps 0.8 lc colors[i] title names[i], \
     x with lines lc rgb 'gray40' dt 3 title 'predicted = measured'
set terminal pngcairo size 1200,720 noenhanced font 'sans,10' background rgb 'white'
set output 'predicted_vs_measured.png'
replot
