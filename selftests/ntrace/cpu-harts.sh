# SPDX-License-Identifier: GPL-2.0
# On the board, from the board scripts of pmu-test, perf-test and
# drain-soak: Linux's CPU numbers and their hart IDs, a "CPU HART" line
# per CPU of /proc/cpuinfo, which truth_file() (truth.sh) reads on the
# host. Its own script, so that set -- touches no caller's arguments.
while IFS=: read -r key val; do
	set -- $key
	case "$*" in
	processor) cpu=$val ;;
	hart) echo $cpu $val ;;
	esac
done < /proc/cpuinfo
