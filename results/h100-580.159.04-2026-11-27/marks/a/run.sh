# build 35c3ed3, bin/carve and bin/libcarve.so built from it (make bin/libcarve.so on the GPU machine)
RATE=540 SERVE=8 ROUNDS=2 timeout 480 experiments/marks/run.sh OUT
