#pragma once
// The source tree and the kanscale executable, as tests/CMakeLists.txt
// passes them: one definition for every test file (a unity build puts
// several in one translation unit).
#include <string>

inline const std::string kSrc = KANSCALE_SOURCE_DIR;
#ifdef KANSCALE_EXE
inline const std::string kExe = KANSCALE_EXE;
#endif
