# build 5134066 (marks.py times push/pop pairs; run.sh's ARMS and BE)
ARMS="nomark:1:;mark:1:--mark=request;mark-other:1:--mark=other;mark-nocalls:0:--mark=request;bare:0:" ROUNDS=2 BE=0 timeout 500 experiments/marks/run.sh OUT
