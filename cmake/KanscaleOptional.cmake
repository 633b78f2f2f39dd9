# Detects the optional parts of the build: MPI, CUDA and NCCL.
# Nothing in model/ or sim/ depends on them; measure/ builds its CUDA, NCCL
# and MPI code only when they are found.

find_package(MPI COMPONENTS CXX)
if(MPI_CXX_FOUND)
  message(STATUS "kanscale: MPI ${MPI_CXX_VERSION} found: MPI backends enabled")
  set(KANSCALE_HAVE_MPI 1)
else()
  message(STATUS "kanscale: MPI not found: MPI backends disabled")
  set(KANSCALE_HAVE_MPI 0)
endif()

# CUDA: only when nvcc is found (the toolkit lives at /usr/local/cuda on the
# project's machines). Architectures 80 (A100) and 90 (H100/H200).
set(KANSCALE_HAVE_CUDA 0)
set(KANSCALE_HAVE_NCCL 0)
option(KANSCALE_CUDA "Build the CUDA kernels and the NCCL backend when nvcc is found" ON)
include(CheckLanguage)
if(KANSCALE_CUDA AND NOT DEFINED CMAKE_CUDA_COMPILER AND EXISTS /usr/local/cuda/bin/nvcc)
  set(CMAKE_CUDA_COMPILER /usr/local/cuda/bin/nvcc)
endif()
if(KANSCALE_CUDA)
  check_language(CUDA)
endif()
if(KANSCALE_CUDA AND CMAKE_CUDA_COMPILER)
  if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
    set(CMAKE_CUDA_ARCHITECTURES 80 90)
  endif()
  enable_language(CUDA)
  set(CMAKE_CUDA_RUNTIME_LIBRARY Shared)
  find_package(CUDAToolkit)
  if(CUDAToolkit_FOUND)
    set(KANSCALE_HAVE_CUDA 1)
    message(STATUS "kanscale: CUDA ${CUDAToolkit_VERSION} found, architectures ${CMAKE_CUDA_ARCHITECTURES}, shared cudart")
    # NCCL ships no CMake config: look under NCCL_HOME, then the toolkit.
    find_path(NCCL_INCLUDE_DIR nccl.h
              HINTS $ENV{NCCL_HOME} ${NCCL_HOME} ${CUDAToolkit_LIBRARY_ROOT} ${CUDAToolkit_INCLUDE_DIRS}/..
              PATH_SUFFIXES include)
    find_library(NCCL_LIBRARY nccl
                 HINTS $ENV{NCCL_HOME} ${NCCL_HOME} ${CUDAToolkit_LIBRARY_ROOT} ${CUDAToolkit_LIBRARY_DIR}
                 PATH_SUFFIXES lib lib64)
    if(NCCL_INCLUDE_DIR AND NCCL_LIBRARY)
      set(KANSCALE_HAVE_NCCL 1)
      add_library(kanscale_nccl INTERFACE)
      target_include_directories(kanscale_nccl INTERFACE ${NCCL_INCLUDE_DIR})
      target_link_libraries(kanscale_nccl INTERFACE ${NCCL_LIBRARY})
      message(STATUS "kanscale: NCCL found: ${NCCL_LIBRARY}")
    else()
      message(STATUS "kanscale: NCCL not found (set NCCL_HOME): NCCL backend disabled")
    endif()
  endif()
elseif(NOT KANSCALE_CUDA)
  message(STATUS "kanscale: KANSCALE_CUDA=OFF: CUDA kernels and NCCL backend disabled")
else()
  message(STATUS "kanscale: nvcc not found: CUDA kernels and NCCL backend disabled")
endif()
