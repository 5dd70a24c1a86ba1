// Declarations only (include/CLibFuzzer.h); SwiftPM wants a source file.
#include "CLibFuzzer.h"
