#!/usr/bin/env bash
# lease d's command: c's run.sh with PARTS="resnet-50 vision-75" (its vision-75 renamed vision-75a),
# then vision-75 again with the orders the other way round (vision-75b)
PARTS="resnet-50 vision-75" bash bin/dev3.sh > $OUT/log 2>&1
mv $OUT/r/vision-75 $OUT/r/vision-75a; mv $OUT/r/vision-75.out $OUT/r/vision-75a.out
R=$OUT/r; PART=vision-75 MECHANISMS=tide ORDERS=ls-first,be-first SERVE_TO=170 experiments/slo/run.sh $R/vision-75b > $R/vision-75b.out 2>&1
tar czf $OUT/r.tgz -C $OUT r
