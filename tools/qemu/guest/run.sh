#!/bin/sh
# Runs on the lab board with the emulated trace hardware: the register
# test, then one capture of the traced workload per configuration.
# Everything lands in /mnt/host for the host side (ntrace-hw-test).
cd /mnt/host || exit 1
insmod ./ntrace_hw.ko || exit 1
cat /proc/ntrace_hw/selftest > selftest.tap
while read -r name cfg; do
	[ -n "$name" ] || continue
	echo "$cfg" > /proc/ntrace_hw/config || { echo "bad config $cfg"; exit 1; }
	./traced > "out.$name" 2>&1
	echo "exit $?" >> "out.$name"
	cat /proc/ntrace_hw/trace > "trace.$name"
	cat /proc/ntrace_hw/status > "status.$name"
done < configs
rmmod ntrace_hw
