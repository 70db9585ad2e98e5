//! The CUDA side: library presence checks, the driver's devices, NVRTC,
//! cuBLAS and a small runtime over `cudarc`'s driver API. All unsafe code of the crate
//! lives in this module and in the benchmarks' launch/copy calls.

pub(crate) mod blas;
pub(crate) mod blaslt;
pub(crate) mod device;
pub(crate) mod libs;
pub(crate) mod nvml;
pub(crate) mod nvrtc;
pub(crate) mod rt;

pub(crate) use device::{DeviceInfo, driver};
pub(crate) use rt::{DeviceBuffer, Gpu, HostBuffer, Kernel, Timer, arg, cu};
