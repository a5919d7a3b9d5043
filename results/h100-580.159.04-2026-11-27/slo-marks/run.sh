# build 690934b; lease c (GPU-d7ba7d2f): c-resnet-50, then c-vision-75; lease d (GPU-4c5d3ecf): d-vision-50, then d-vision-75
PART=resnet-50 MECHANISMS=mps-split,tide SPLITS=75 TIDE="8:300us:1:slo=2x,8:300us:1:slo=2x:mark" SERVE_TO=540 experiments/slo/run.sh c-resnet-50
PART=vision-75 MECHANISMS=tide TIDE="8:300us:1:slo=2x,8:300us:1:slo=2x:mark" SERVE_TO=540 experiments/slo/run.sh c-vision-75
PART=vision-50 MECHANISMS=tide TIDE="8:300us:1:slo=2x,8:300us:1:slo=2x:mark" SERVE_TO=250 timeout 260 experiments/slo/run.sh d-vision-50
PART=vision-75 MECHANISMS=tide TIDE="8:300us:1:slo=2x,8:300us:1:slo=2x:mark" SERVE_TO=260 timeout 270 experiments/slo/run.sh d-vision-75
# lease e (GPU-8423f385), build 6449044
PART=vision-75 MECHANISMS=tide TIDE="8:300us:1:slo=2x,8:300us:1:slo=2x:mark" SERVE_TO=235 timeout 240 experiments/slo/run.sh e-vision-75
