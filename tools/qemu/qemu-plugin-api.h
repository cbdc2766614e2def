/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The part of QEMU's TCG plugin interface (API version 7, QEMU 11.x) that
 * the ntrace plugin uses, declared here because the lab's QEMU (Debian's
 * 1:11.1.3+ds-1~bpo13+1) cannot be matched with its qemu-plugin.h: the
 * Debian mirror reachable here serves no source package of QEMU 11.
 *
 * Every declaration below was checked against the installed QEMU by
 * running it on that QEMU (tools/qemu/ntrace-hw-test does, every time):
 * version 7 added a user-data pointer to the callbacks that lacked one
 * (translation, vCPU init, discontinuity, at-exit) and dropped the plugin
 * id from their arguments, made qemu_plugin_read_register() return bool,
 * and the register descriptors grew (read them with the GArray's element
 * size). GLib types are the host's; QEMU passes them in from its own GLib.
 */
#ifndef NTRACE_QEMU_PLUGIN_API_H
#define NTRACE_QEMU_PLUGIN_API_H

#include <glib.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define QEMU_PLUGIN_EXPORT __attribute__((visibility("default")))
#define NTRACE_QEMU_PLUGIN_API_VERSION 7

typedef uint64_t qemu_plugin_id_t;

typedef struct qemu_info_t {
	const char *target_name;
	struct {
		int min;
		int cur;
	} version;
	bool system_emulation;
	union {
		struct {
			int smp_vcpus;
			int max_vcpus;
		} system;
	};
} qemu_info_t;

struct qemu_plugin_tb;
struct qemu_plugin_insn;
struct qemu_plugin_hwaddr;
struct qemu_plugin_register;

typedef uint32_t qemu_plugin_meminfo_t;

enum qemu_plugin_cb_flags {
	QEMU_PLUGIN_CB_NO_REGS,
	QEMU_PLUGIN_CB_R_REGS,
	QEMU_PLUGIN_CB_RW_REGS,
	QEMU_PLUGIN_CB_RW_REGS_PC,
};

enum qemu_plugin_mem_rw {
	QEMU_PLUGIN_MEM_R = 1,
	QEMU_PLUGIN_MEM_W,
	QEMU_PLUGIN_MEM_RW,
};

enum qemu_plugin_discon_type {
	QEMU_PLUGIN_DISCON_INTERRUPT = 1 << 0,
	QEMU_PLUGIN_DISCON_EXCEPTION = 1 << 1,
	QEMU_PLUGIN_DISCON_HOSTCALL = 1 << 2,
	QEMU_PLUGIN_DISCON_ALL = -1,
};

enum qemu_plugin_mem_value_type {
	QEMU_PLUGIN_MEM_VALUE_U8,
	QEMU_PLUGIN_MEM_VALUE_U16,
	QEMU_PLUGIN_MEM_VALUE_U32,
	QEMU_PLUGIN_MEM_VALUE_U64,
	QEMU_PLUGIN_MEM_VALUE_U128,
};

typedef struct {
	enum qemu_plugin_mem_value_type type;
	union {
		uint8_t u8;
		uint16_t u16;
		uint32_t u32;
		uint64_t u64;
		struct {
			uint64_t low, high;
		} u128;
	} data;
} qemu_plugin_mem_value;

/* The leading fields of QEMU's register descriptor (it has more). */
typedef struct {
	struct qemu_plugin_register *handle;
	const char *name;
	const char *feature;
} qemu_plugin_reg_descriptor;

enum qemu_plugin_cond {
	QEMU_PLUGIN_COND_NEVER,
	QEMU_PLUGIN_COND_ALWAYS,
	QEMU_PLUGIN_COND_EQ,
	QEMU_PLUGIN_COND_NE,
	QEMU_PLUGIN_COND_LT,
	QEMU_PLUGIN_COND_LE,
	QEMU_PLUGIN_COND_GT,
	QEMU_PLUGIN_COND_GE,
};

/* one u64 per vCPU inside a scoreboard, which QEMU sizes and owns */
struct qemu_plugin_scoreboard;
typedef struct {
	struct qemu_plugin_scoreboard *score;
	size_t offset;
} qemu_plugin_u64;

enum qemu_plugin_hwaddr_operation_result {
	QEMU_PLUGIN_HWADDR_OPERATION_OK,
	QEMU_PLUGIN_HWADDR_OPERATION_ERROR,
};

typedef void (*qemu_plugin_vcpu_udata_cb_t)(unsigned int vcpu, void *userdata);
typedef void (*qemu_plugin_udata_cb_t)(void *userdata);
typedef void (*qemu_plugin_tb_trans_cb_t)(struct qemu_plugin_tb *tb,
					  void *userdata);
typedef void (*qemu_plugin_discon_cb_t)(unsigned int vcpu,
					enum qemu_plugin_discon_type type,
					uint64_t from_pc, uint64_t to_pc,
					void *userdata);
typedef void (*qemu_plugin_mem_cb_t)(unsigned int vcpu,
				     qemu_plugin_meminfo_t info,
				     uint64_t vaddr, void *userdata);

extern QEMU_PLUGIN_EXPORT int qemu_plugin_version;
QEMU_PLUGIN_EXPORT int qemu_plugin_install(qemu_plugin_id_t id,
					   const qemu_info_t *info,
					   int argc, char **argv);

void qemu_plugin_register_vcpu_init_cb(qemu_plugin_id_t id,
				       qemu_plugin_vcpu_udata_cb_t cb,
				       void *userdata);
void qemu_plugin_register_vcpu_tb_trans_cb(qemu_plugin_id_t id,
					   qemu_plugin_tb_trans_cb_t cb,
					   void *userdata);
void qemu_plugin_register_vcpu_discon_cb(qemu_plugin_id_t id,
					 enum qemu_plugin_discon_type type,
					 qemu_plugin_discon_cb_t cb,
					 void *userdata);
void qemu_plugin_register_atexit_cb(qemu_plugin_id_t id,
				    qemu_plugin_udata_cb_t cb, void *userdata);
void qemu_plugin_register_vcpu_tb_exec_cond_cb(struct qemu_plugin_tb *tb,
					       qemu_plugin_vcpu_udata_cb_t cb,
					       enum qemu_plugin_cb_flags flags,
					       enum qemu_plugin_cond cond,
					       qemu_plugin_u64 entry,
					       uint64_t imm, void *userdata);
void qemu_plugin_register_vcpu_mem_cb(struct qemu_plugin_insn *insn,
				      qemu_plugin_mem_cb_t cb,
				      enum qemu_plugin_cb_flags flags,
				      enum qemu_plugin_mem_rw rw,
				      void *userdata);

struct qemu_plugin_scoreboard *qemu_plugin_scoreboard_new(size_t element_size);
void qemu_plugin_u64_set(qemu_plugin_u64 entry, unsigned int vcpu_index,
			 uint64_t val);

size_t qemu_plugin_tb_n_insns(const struct qemu_plugin_tb *tb);
struct qemu_plugin_insn *qemu_plugin_tb_get_insn(const struct qemu_plugin_tb *tb,
						 size_t idx);
size_t qemu_plugin_insn_data(const struct qemu_plugin_insn *insn, void *dest,
			     size_t len);
size_t qemu_plugin_insn_size(const struct qemu_plugin_insn *insn);
uint64_t qemu_plugin_insn_vaddr(const struct qemu_plugin_insn *insn);

unsigned int qemu_plugin_mem_size_shift(qemu_plugin_meminfo_t info);
qemu_plugin_mem_value qemu_plugin_mem_get_value(qemu_plugin_meminfo_t info);
struct qemu_plugin_hwaddr *qemu_plugin_get_hwaddr(qemu_plugin_meminfo_t info,
						  uint64_t vaddr);
uint64_t qemu_plugin_hwaddr_phys_addr(const struct qemu_plugin_hwaddr *haddr);

GArray *qemu_plugin_get_registers(void);
bool qemu_plugin_read_register(struct qemu_plugin_register *handle,
			       GByteArray *buf);
enum qemu_plugin_hwaddr_operation_result
qemu_plugin_write_memory_hwaddr(uint64_t addr, GByteArray *data);

#endif
