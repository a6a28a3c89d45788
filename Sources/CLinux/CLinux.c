// The CLinux target is headers only; SwiftPM needs one source file to build it.
#include "CLinux.h"
