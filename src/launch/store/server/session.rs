//! One thread per connection: the hello, then requests until goodbye; `get`, gathers and
//! barriers wait here on the shared state.

use std::collections::HashMap;
use std::net::TcpStream;
use std::sync::{Arc, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use super::{Group, Presence, Round, Shared, State};
use crate::launch::store::proto::{self, Dec, Enc, ReadError};
use crate::launch::store::{set_keepalive, MAX_VALUE};

/// One admitted rank's connection, from welcome to goodbye.
pub(super) fn serve(sh: &Shared, mut s: TcpStream, rank: usize) {
    let _ = s.set_nonblocking(false);
    let _ = s.set_nodelay(true);
    set_keepalive(&s);
    let welcome = Enc::new(proto::OK).u32(sh.world as u32).finish();
    let why = match sh.reply(&mut s, &welcome) {
        Ok(()) => session(sh, &mut s, rank),
        Err(e) => Presence::Lost(format!("could not be welcomed: {e}")),
    };
    sh.lock().presence[rank] = why;
    sh.changed.notify_all();
}

/// Serves requests until the rank says goodbye or vanishes; returns how it went.
fn session(sh: &Shared, s: &mut TcpStream, rank: usize) -> Presence {
    loop {
        let frame = match proto::read_frame(s, proto::MAX_REQUEST, None, sh.timeout) {
            Ok(f) => f,
            Err(ReadError::Closed) => {
                return Presence::Lost(
                    "closed its connection without saying goodbye (did it exit or crash?)".into(),
                )
            }
            Err(ReadError::TooLarge(n)) => {
                let msg = format!(
                    "a message of {n} bytes is over the store's limit ({MAX_VALUE} bytes a value)"
                );
                let _ = sh.reply(s, &proto::err_frame(proto::ERR_USAGE, &msg));
                return Presence::Lost(format!(
                    "sent a message of {n} bytes, over the store's limit, and was disconnected"
                ));
            }
            Err(e) => return Presence::Lost(format!("lost its connection: {e}")),
        };
        let reply = match handle(sh, rank, &frame) {
            Some(r) => r,
            None => return Presence::Left,
        };
        if let Err(e) = sh.reply(s, &reply) {
            return Presence::Lost(format!("could not be sent a reply: {e}"));
        }
    }
}

/// Performs one request and builds its reply; `None` for goodbye.
fn handle(sh: &Shared, rank: usize, frame: &[u8]) -> Option<Vec<u8>> {
    let parsed = parse_request(frame);
    let fail = |msg: String| Some(proto::err_frame(proto::ERR_RUN, &msg));
    match parsed {
        Err(_) => Some(proto::err_frame(
            proto::ERR_USAGE,
            "malformed store request",
        )),
        Ok(Request::Bye) => None,
        Ok(Request::Set(key, value)) => {
            sh.lock().kv.insert(key, value);
            sh.changed.notify_all();
            Some(Enc::new(proto::OK).finish())
        }
        Ok(Request::Get(wait, key)) => match get(sh, rank, &key, wait) {
            Ok(v) => Some(Enc::new(proto::OK).bytes32(&v).finish()),
            Err(msg) => fail(msg),
        },
        Ok(Request::Gather(op, wait, name, value)) => match gather(sh, rank, op, name, value, wait)
        {
            Ok(values) if op == proto::BARRIER => {
                drop(values);
                Some(Enc::new(proto::OK).finish())
            }
            Ok(values) => {
                let mut e = Enc::new(proto::OK).u32(values.len() as u32);
                for v in values.iter() {
                    e = e.bytes32(v);
                }
                Some(e.finish())
            }
            Err(msg) => fail(msg),
        },
    }
}

/// Decodes one request payload; any shortfall, excess or unknown kind is an error.
pub(in crate::launch::store) fn parse_request(frame: &[u8]) -> std::io::Result<Request> {
    let mut d = Dec::new(frame);
    let req = match d.u8()? {
        proto::SET => Request::Set(d.key()?, d.bytes32(MAX_VALUE)?.to_vec()),
        proto::GET => Request::Get(wait(d.u64()?), d.key()?),
        proto::GATHER => Request::Gather(
            proto::GATHER,
            wait(d.u64()?),
            d.key()?,
            d.bytes32(MAX_VALUE)?.to_vec(),
        ),
        proto::BARRIER => Request::Gather(proto::BARRIER, wait(d.u64()?), d.key()?, Vec::new()),
        proto::BYE => Request::Bye,
        _ => return Err(std::io::ErrorKind::InvalidData.into()),
    };
    d.end()?;
    Ok(req)
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(in crate::launch::store) enum Request {
    Set(String, Vec<u8>),
    Get(Duration, String),
    Gather(u8, Duration, String, Vec<u8>),
    Bye,
}

fn wait(ms: u64) -> Duration {
    Duration::from_millis(ms).min(proto::MAX_WAIT)
}

/// Waits until `key` is set, a rank vanishes, the wait ends or the store stops.
fn get(sh: &Shared, rank: usize, key: &str, wait: Duration) -> Result<Vec<u8>, String> {
    let deadline = proto::deadline_after(wait);
    let mut st = sh.lock();
    st.getting += 1;
    let got = wait_for_key(sh, st, rank, key, (wait, deadline));
    sh.lock().getting -= 1;
    got
}

fn wait_for_key(
    sh: &Shared,
    mut st: MutexGuard<'_, State>,
    rank: usize,
    key: &str,
    (wait, deadline): (Duration, Instant),
) -> Result<Vec<u8>, String> {
    loop {
        if let Some(v) = st.kv.get(key) {
            return Ok(v.clone());
        }
        if st.stopping {
            return Err(format!(
                "get '{key}' failed: the store on rank 0 is shutting down"
            ));
        }
        if let Some(lost) = st.first_lost() {
            return Err(format!(
                "get '{key}' by rank {rank} cannot complete: {lost}"
            ));
        }
        let now = Instant::now();
        if now >= deadline {
            return Err(format!(
                "key '{key}' was not set within {} (rank {rank} waited for it)",
                humantime::format_duration(wait)
            ));
        }
        st = sh
            .changed
            .wait_timeout(st, deadline - now)
            .unwrap_or_else(PoisonError::into_inner)
            .0;
    }
}

/// Joins this rank's next round of gather/barrier `name` and waits for every rank's value.
fn gather(
    sh: &Shared,
    rank: usize,
    op: u8,
    name: String,
    value: Vec<u8>,
    wait: Duration,
) -> Result<Arc<Vec<Vec<u8>>>, String> {
    let world = sh.world;
    let deadline = proto::deadline_after(wait);
    let what = match op {
        proto::BARRIER => format!("barrier '{name}'"),
        _ => format!("all_gather '{name}'"),
    };
    let key = (op, name);
    let mut guard = sh.lock();
    let st = &mut *guard;
    let group = st.groups.entry(key.clone()).or_insert_with(|| Group {
        next: vec![0; world],
        rounds: HashMap::new(),
    });
    let round_no = group.next[rank];
    group.next[rank] += 1;
    let round = group.rounds.entry(round_no).or_insert_with(|| Round {
        values: vec![None; world],
        arrived: 0,
        result: None,
        taken: 0,
    });
    round.values[rank] = Some(value);
    round.arrived += 1;
    if round.arrived == world {
        let all = round
            .values
            .iter_mut()
            .map(|v| v.take().unwrap_or_default())
            .collect();
        round.result = Some(Arc::new(all));
        sh.changed.notify_all();
    }
    loop {
        let st = &mut *guard;
        let group = st.groups.get_mut(&key).expect("groups are never removed");
        let round = group
            .rounds
            .get_mut(&round_no)
            .expect("a round lives until all took it");
        if let Some(all) = round.result.clone() {
            round.taken += 1;
            if round.taken == world {
                group.rounds.remove(&round_no);
            }
            return Ok(all);
        }
        if st.stopping {
            return Err(format!(
                "{what} failed: the store on rank 0 is shutting down"
            ));
        }
        let missing: Vec<usize> = (0..world).filter(|&r| round.values[r].is_none()).collect();
        if let Some(gone) = missing.iter().find_map(|&r| st.gone(r)) {
            return Err(format!("{what} cannot complete: {gone}"));
        }
        let now = Instant::now();
        if now >= deadline {
            return Err(format!(
                "{what} timed out after {} on rank {rank}: {}",
                humantime::format_duration(wait),
                st.describe_missing(&missing, &sh.refused())
            ));
        }
        guard = sh
            .changed
            .wait_timeout(guard, deadline - now)
            .unwrap_or_else(PoisonError::into_inner)
            .0;
    }
}
