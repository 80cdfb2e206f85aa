//! Starting rank processes. `local` spawns them on this host; `env` reads what a launcher that
//! spans hosts (mpirun, srun, torchrun-style variables) tells each rank; `store` is the TCP
//! rendezvous through which such ranks find each other.

pub mod env;
pub mod handoff;
pub mod hostlist;
pub mod local;
pub mod peers;
pub mod rendezvous;
pub mod store;
