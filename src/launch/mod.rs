//! Starting rank processes. `local` spawns them on this host; launchers that span hosts
//! (mpirun, srun, torchrun-style variables) come with the TCP transport.

pub mod local;
