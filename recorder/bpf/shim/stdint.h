/* The BPF program's <stdint.h>: vmlinux.h (generated from the kernel's BTF) already defines
 * the fixed-width types sched_format.h uses, and the C library's stdint.h would define
 * uint64_t a second time as a different type. Only the BPF compile sees this directory. */
#ifndef VPROF_BPF_STDINT_SHIM_H
#define VPROF_BPF_STDINT_SHIM_H
#endif
