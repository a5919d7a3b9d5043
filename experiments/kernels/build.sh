#!/usr/bin/env bash
# Builds the CUPTI kernel recorder (recorder.c) into SO against the
# toolkit's CUPTI headers and library ($CUDA_HOME, default /usr/local/cuda),
# with the newest CUpti_ActivityKernelN that builds; says which on stdout.
# Exits non-zero, saying why, where it cannot. Usage: build.sh SO
set -u
so=${1:?usage: build.sh SO}
E=$(dirname "$(realpath "$0")")
CUDA=${CUDA_HOME:-/usr/local/cuda}
inc= lib=
for d in "$CUDA/extras/CUPTI/include" "$CUDA/targets/x86_64-linux/include" "$CUDA/include"; do
	[ -f "$d/cupti_activity.h" ] && { inc=$d; break; }
done
for f in "$CUDA/extras/CUPTI/lib64/libcupti.so" "$CUDA/targets/x86_64-linux/lib/libcupti.so" "$CUDA/lib64/libcupti.so" \
	"$CUDA"/extras/CUPTI/lib64/libcupti.so.[0-9]* "$CUDA"/targets/x86_64-linux/lib/libcupti.so.[0-9]*; do
	[ -e "$f" ] && { lib=$f; break; }
done
cc=$(command -v cc || command -v gcc)
if [ -z "$cc" ]; then
	echo "no C compiler (cc or gcc) to build the recorder" >&2
	exit 1
elif [ -z "$inc" ] || [ -z "$lib" ]; then
	echo "no CUPTI under $CUDA (cupti_activity.h: ${inc:-none}, libcupti.so: ${lib:-none}); set CUDA_HOME" >&2
	exit 1
fi
# the newest CUpti_ActivityKernelN first, older ones if it does not build
for rec in $(grep -ho 'CUpti_ActivityKernel[0-9]\+' "$inc"/cupti_activity*.h | sort -uV -r | head -4); do
	echo "building against $inc, $lib, $rec" >&2
	if "$cc" -shared -fPIC -O2 -Wall -DCARVE_KERNEL_RECORD="$rec" -DCARVE_CUPTI_LIB="\"$lib\"" -I"$inc" -I"$CUDA/include" \
		"$E/recorder.c" -ldl -lstdc++ -o "$so"; then
		echo "built with $rec"
		exit 0
	fi
done
echo "the kernel recorder did not build (see above)" >&2
exit 1
