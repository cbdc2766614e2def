# SPDX-License-Identifier: GPL-2.0-only
#
# ntrace: N-Trace and CTR tracing for RISC-V Linux.
#
#   make            libntrace (static + shared + pkg-config) and the CLI
#   make check      install what is missing, build, run every test
#   make demo       the virtual RISC-V board and a traced RISC-V program
#   make bench      benchmarks (figures and baseline in one run)
#   make plugin     the emulated N-Trace hardware (QEMU plugin, tools/qemu)
#   make lab-test   the board's tests alone; lab-shell, lab-clean
#   make drain-soak ROUNDS=n  per-CPU recordings on one 2-hart board
#   make htmldocs   Documentation/ as HTML in O/htmldocs; docs-check
#
# Variables: O=<dir> build directory (default build), CC, SAN=1 for an
# ASan/UBSan build.

O ?= build
CC ?= gcc
PKG_CONFIG ?= pkg-config
VERSION := 0.1.0

ifeq ($(SAN),1)
SANFLAGS := -fsanitize=address,undefined -fno-omit-frame-pointer \
	    -fno-sanitize-recover=undefined
OPT ?= -O1 -g
else
OPT ?= -O2 -g
endif

WARN := -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes \
	-Wmissing-prototypes -Wformat=2
BASE_CFLAGS := -std=c11 -D_GNU_SOURCE $(OPT) $(WARN) $(SANFLAGS)
LIB_CFLAGS := $(BASE_CFLAGS) -fPIC -fvisibility=default
INC := -Itools/lib/ntrace
ELF_LIBS := $(shell $(PKG_CONFIG) --libs libelf 2>/dev/null || echo -lelf)

LIB_SRCS := $(addprefix tools/lib/ntrace/, codec.c encoder.c insn.c \
	    image.c pcgen.c bluespec.c msgfmt.c \
	    decoder.c writers.c)
LIB_OBJS := $(patsubst %.c,$(O)/%.o,$(LIB_SRCS))
LIB_A := $(O)/libntrace.a
LIB_SO := $(O)/libntrace.so.0
LIB_PC := $(O)/libntrace.pc

CLI_SRCS := $(wildcard tools/ntrace/*.c)
CLI_OBJS := $(patsubst %.c,$(O)/%.o,$(CLI_SRCS))
CLI := $(O)/ntrace

TEST_DIR := tools/testing/ntrace
TESTS := $(patsubst $(TEST_DIR)/%.c,$(O)/tests/%,$(wildcard $(TEST_DIR)/test_*.c))
TEST_TOOLS := $(O)/tests/insn_objdump_check

BENCH_SRCS := $(wildcard bench/*.c)
BENCHES := $(patsubst bench/%.c,$(O)/bench/%,$(BENCH_SRCS))

all: $(LIB_A) $(LIB_SO) $(LIB_PC) $(CLI)

$(O)/%.o: %.c tools/lib/ntrace/ntrace.h tools/lib/ntrace/bluespec.h \
		tools/lib/ntrace/pack.h tools/lib/ntrace/reader.h tools/ntrace/cli.h
	@mkdir -p $(dir $@)
	$(CC) $(LIB_CFLAGS) $(INC) -c $< -o $@

$(LIB_A): $(LIB_OBJS)
	rm -f $@
	$(AR) rcs $@ $^

$(LIB_SO): $(LIB_OBJS)
	$(CC) $(SANFLAGS) -shared -Wl,-soname,libntrace.so.0 -o $@ $^ $(ELF_LIBS)
	ln -sf libntrace.so.0 $(O)/libntrace.so

$(LIB_PC): tools/lib/ntrace/libntrace.pc.in
	@mkdir -p $(dir $@)
	sed -e 's|@PREFIX@|$(PREFIX)|; s|@VERSION@|$(VERSION)|' $< > $@

$(CLI): $(CLI_OBJS) $(LIB_A)
	$(CC) $(SANFLAGS) -o $@ $(CLI_OBJS) $(LIB_A) $(ELF_LIBS)

$(O)/tests/%: $(TEST_DIR)/%.c $(LIB_A) $(wildcard $(TEST_DIR)/*.h)
	@mkdir -p $(dir $@)
	$(CC) $(BASE_CFLAGS) $(INC) -I$(TEST_DIR) -o $@ $< $(LIB_A) $(ELF_LIBS) -lm

tests: $(TESTS) $(TEST_TOOLS) $(CLI)

$(O)/bench/%: bench/%.c bench/bench.h $(wildcard $(TEST_DIR)/*.h) $(LIB_A)
	@mkdir -p $(dir $@)
	$(CC) $(BASE_CFLAGS) $(INC) -I$(TEST_DIR) -o $@ $< $(LIB_A) $(ELF_LIBS)

# libFuzzer targets (clang only); built by the test runner
$(O)/fuzz/%: $(TEST_DIR)/%.c $(LIB_SRCS) tools/lib/ntrace/ntrace.h \
		tools/lib/ntrace/pack.h tools/lib/ntrace/reader.h
	@mkdir -p $(dir $@)
	clang -std=c11 -D_GNU_SOURCE -g -O1 -fsanitize=fuzzer,address,undefined \
		$(INC) -o $@ $< $(LIB_SRCS) $(ELF_LIBS)

# The emulated N-Trace hardware: a TCG plugin that the lab's QEMU loads
# (tools/qemu). GLib's headers want gnu11; never sanitized (QEMU is not).
PLUGIN := $(O)/ntrace-plugin.so
PLUGIN_SRCS := tools/qemu/ntrace-plugin.c $(addprefix tools/lib/ntrace/, \
	       encoder.c codec.c insn.c)
$(PLUGIN): $(PLUGIN_SRCS) tools/qemu/qemu-plugin-api.h \
		tools/lib/ntrace/ntrace.h tools/lib/ntrace/pack.h
	@mkdir -p $(dir $@)
	$(CC) -std=gnu11 $(OPT) $(WARN) -shared -fPIC -fvisibility=hidden \
		$(shell $(PKG_CONFIG) --cflags glib-2.0) $(INC) -Itools/qemu \
		$(PLUGIN_SRCS) -o $@
plugin: $(PLUGIN)

# RISC-V test programs and their executed-PC traces
NT_PROG_OUT := $(O)/programs
include $(TEST_DIR)/programs/programs.mk

check:
	bash $(TEST_DIR)/run-tests.sh

# The virtual RISC-V board (tools/lab, Documentation/lab.rst); needs root.
lab:
	$(MAKE) -C tools/lab build
lab-test:
	$(MAKE) -C tools/lab test
lab-shell:
	$(MAKE) -C tools/lab shell
lab-clean:
	$(MAKE) -C tools/lab clean
# Judges a change to how the driver drains the sink (driver.rst).
ROUNDS ?= 20
drain-soak:
	bash selftests/ntrace/drain-soak $(O) $(ROUNDS)

demo:
	bash scripts/demo.sh

# Documentation/ through Sphinx (python3-sphinx): -W makes a warning (a
# broken :doc: link, a table or literal that does not parse, a page in
# no toctree) an error; -n also flags references to nothing.
SPHINX_FLAGS := -W -n -q
htmldocs:
	sphinx-build $(SPHINX_FLAGS) -b html Documentation $(O)/htmldocs
docs-check:
	sphinx-build $(SPHINX_FLAGS) -b dummy Documentation $(O)/docs-check

bench: $(BENCHES) $(CLI)
	bash bench/run.sh $(O)

PREFIX ?= /usr/local
install: all
	install -d $(DESTDIR)$(PREFIX)/lib/pkgconfig $(DESTDIR)$(PREFIX)/include/libntrace \
		$(DESTDIR)$(PREFIX)/bin
	install -m 644 $(LIB_A) $(DESTDIR)$(PREFIX)/lib/
	install -m 755 $(LIB_SO) $(DESTDIR)$(PREFIX)/lib/
	ln -sf libntrace.so.0 $(DESTDIR)$(PREFIX)/lib/libntrace.so
	sed -e 's|@PREFIX@|$(PREFIX)|; s|@VERSION@|$(VERSION)|' \
		tools/lib/ntrace/libntrace.pc.in > $(DESTDIR)$(PREFIX)/lib/pkgconfig/libntrace.pc
	install -m 644 tools/lib/ntrace/ntrace.h tools/lib/ntrace/bluespec.h \
		$(DESTDIR)$(PREFIX)/include/libntrace/
	install -m 755 $(CLI) $(DESTDIR)$(PREFIX)/bin/

clean:
	rm -rf $(O)

.PHONY: all tests plugin check demo bench install clean lab lab-test lab-shell \
	lab-clean drain-soak htmldocs docs-check
.SECONDARY:
