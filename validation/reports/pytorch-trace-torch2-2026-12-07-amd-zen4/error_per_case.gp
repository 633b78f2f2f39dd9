# kanscale plot: Iteration-time error per case
# Data: error_per_case.dat (x, y, band lo, band hi, outer band lo, outer band hi; one block per series).
# Re-render: gnuplot error_per_case.gp (writes error_per_case.svg and error_per_case.png)
# Error bars at 0: +- each case's noise floor (robust spread of its rounds).
set terminal svg size 1200,720 dynamic noenhanced font 'sans,12' background rgb 'white'
set output 'error_per_case.svg'
set title 'Iteration-time error per case' noenhanced
set xlabel 'case (in the order of the table in the report)' noenhanced
set ylabel 'predicted / measured - 1 (percent)' noenhanced
set grid
set key outside right top vertical Left reverse noenhanced
set style fill transparent solid 0.18 noborder
set xrange [0.5:24.5]
set xtics 1
array names[2]
names[1] = 'judged'
names[2] = 'noise floor (+-)'
array dashes[2]
array colors[2]
dashes[1] = 1; colors[1] = 1
dashes[2] = 1; colors[2] = 3
plot 'error_per_case.dat' index 1 using 1:2:3:4 with yerrorbars lc colors[2] pt 7 ps 0.8 title '90 percent interval (error bars)', \
     for [i=1:2] 'error_per_case.dat' index (i-1) using 1:2 with points pt 7 ps 0.8 lc colors[i] title names[i]
set terminal pngcairo size 1200,720 noenhanced font 'sans,10' background rgb 'white'
set output 'error_per_case.png'
replot
