# kanscale plot: Model size: peak memory per GPU at 512 GPUs (default)
# Data: model_size_memory.dat (x, y, band lo, band hi, outer band lo, outer band hi; one block per series).
# Re-render: gnuplot model_size_memory.gp (writes model_size_memory.svg and model_size_memory.png)
set terminal svg size 1200,720 dynamic noenhanced font 'sans,12' background rgb 'white'
set output 'model_size_memory.svg'
set title 'Model size: peak memory per GPU at 512 GPUs (default)' noenhanced
set xlabel 'parameters' noenhanced
set ylabel 'peak memory per GPU (GiB)' noenhanced
set logscale x 10
set logscale y 10
set grid
set key outside right top vertical Left reverse noenhanced
set style fill transparent solid 0.18 noborder
set xtics ('10k' 10000, '100k' 100000, '1M' 1000000, '10M' 10000000, '100M' 100000000)
array names[1]
names[1] = 'dgx-a100 bucket_cap=1.00 MiB = dgx-a100 bucket_cap=25.00 ...'
array dashes[1]
array colors[1]
dashes[1] = 1; colors[1] = 1
plot for [i=1:1] 'model_size_memory.dat' index (i-1) using 1:2 with linespoints pt 7 ps 0.6 lw 1.5 dt dashes[i] lc colors[i] title names[i]
set terminal pngcairo size 1200,720 noenhanced font 'sans,10' background rgb 'white'
set output 'model_size_memory.png'
replot
