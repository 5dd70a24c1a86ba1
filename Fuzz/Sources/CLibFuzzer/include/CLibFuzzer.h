// libFuzzer's entry point for programs with their own main (LLVM 11+). It is
// defined in the toolchain's libclang_rt.fuzzer_no_main, which
// Scripts/sanitize.sh links into the fuzz build only; a plain build never
// calls it. See Fuzz/README.md.
#ifndef OUTBOX_CLIBFUZZER_H
#define OUTBOX_CLIBFUZZER_H

#include <stddef.h>
#include <stdint.h>

int LLVMFuzzerRunDriver(int *argc, char ***argv, int (*callback)(const uint8_t *data, size_t size));

#endif
