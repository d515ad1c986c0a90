//! Ids to values by the id's hash, for a load's joins (a tool result to its call, an
//! observation to the action that caused it). The id text is not copied: the caller says,
//! from a value, which id it was stored under (the event holding that id). A `String` key for
//! each of a million ids was a third of OpenHands' peak memory, and hashing them again while
//! the maps grew a tenth of its load.

use rustc_hash::FxHashMap;
use std::collections::HashMap;
use std::collections::hash_map::Entry;

pub struct IdMap<V> {
    by_hash: FxHashMap<u64, V>,
    /// Ids whose hash an earlier id has, which a crafted file can make: kept by the id, in a
    /// map whose hash a file cannot aim at.
    collided: HashMap<Box<str>, V>,
}

impl<V> Default for IdMap<V> {
    fn default() -> Self {
        IdMap {
            by_hash: FxHashMap::default(),
            collided: HashMap::new(),
        }
    }
}

fn hash(id: &str) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut h = rustc_hash::FxHasher::default();
    id.hash(&mut h);
    h.finish()
}

impl<V> IdMap<V> {
    /// The value stored under `id`; `id_of` gives the id a stored value belongs to.
    pub fn get<'t>(&self, id: &str, id_of: impl Fn(&V) -> &'t str) -> Option<&V> {
        match self.by_hash.get(&hash(id)) {
            Some(v) if id_of(v) == id => Some(v),
            _ => self.collided.get(id),
        }
    }

    pub fn get_mut<'t>(&mut self, id: &str, id_of: impl Fn(&V) -> &'t str) -> Option<&mut V> {
        match self.by_hash.get_mut(&hash(id)) {
            Some(v) if id_of(v) == id => Some(v),
            _ => self.collided.get_mut(id),
        }
    }

    /// Store `v` under `id`, in place of a value of the same id. `id_of(&v)` must be `id`.
    pub fn insert<'t>(&mut self, id: &str, v: V, id_of: impl Fn(&V) -> &'t str) {
        match self.by_hash.entry(hash(id)) {
            Entry::Vacant(e) => {
                e.insert(v);
            }
            Entry::Occupied(mut e) if id_of(e.get()) == id => {
                e.insert(v);
            }
            Entry::Occupied(_) => {
                self.collided.insert(id.into(), v);
            }
        }
    }
}

/// An [`IdMap`] that keeps its ids itself, end to end in one string, for ids no event holds
/// (an OpenHands `tool_call_id`): a few bytes an id rather than a `String` each.
pub struct KeptIds<V> {
    map: IdMap<(V, u32, u32)>,
    text: String,
}

impl<V> Default for KeptIds<V> {
    fn default() -> Self {
        KeptIds {
            map: IdMap::default(),
            text: String::new(),
        }
    }
}

impl<V> KeptIds<V> {
    pub fn get(&self, id: &str) -> Option<&V> {
        let text = &self.text;
        self.map
            .get(id, |(_, a, b)| text.get(*a as usize..*b as usize).unwrap_or(""))
            .map(|(v, ..)| v)
    }

    /// Store `v` under `id`, in place of a value of the same id. Past 4 GiB of ids (a file
    /// of that many would need far more) an id is kept in the map of collided ids instead.
    pub fn insert(&mut self, id: &str, v: V) {
        let text = &mut self.text;
        let map = &mut self.map;
        if let Some(slot) = map.get_mut(id, |(_, a, b)| text.get(*a as usize..*b as usize).unwrap_or("")) {
            slot.0 = v;
            return;
        }
        let a = text.len();
        let b = a + id.len();
        match (u32::try_from(a), u32::try_from(b)) {
            (Ok(a32), Ok(b32)) => {
                text.push_str(id);
                let text = &self.text;
                map.insert(id, (v, a32, b32), |(_, a, b)| {
                    text.get(*a as usize..*b as usize).unwrap_or("")
                });
            }
            _ => {
                map.collided.insert(id.into(), (v, 0, 0));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn ids_of_one_hash_stay_apart() {
        let held = ["a", "b", "c"];
        let id_of = |&i: &usize| held[i];
        let mut m: IdMap<usize> = IdMap::default();
        // Stored as if every id had the first one's hash, which only a crafted file makes.
        for i in 0..held.len() {
            match m.by_hash.entry(hash(held[0])) {
                Entry::Vacant(e) => {
                    e.insert(i);
                }
                Entry::Occupied(_) => {
                    m.collided.insert(held[i].into(), i);
                }
            }
        }
        assert_eq!((m.by_hash.len(), m.collided.len()), (1, 2));
        for (i, id) in held.iter().enumerate() {
            assert_eq!(m.get(id, id_of), Some(&i));
        }
        assert_eq!(m.get("d", id_of), None);
    }

    proptest! {
        /// Both maps answer as a `HashMap<String, _>` does, the last value of an id winning.
        #[test]
        fn maps_answer_as_a_hash_map_does(ops in prop::collection::vec(("[a-d]{0,3}", 0u32..100, any::<bool>()), 0..200)) {
            let mut want: HashMap<String, u32> = HashMap::new();
            let mut kept: KeptIds<u32> = KeptIds::default();
            // The ids an IdMap's values point at, as events hold them.
            let mut held: Vec<String> = Vec::new();
            let mut by_event: IdMap<usize> = IdMap::default();
            let mut by_event_want: HashMap<String, usize> = HashMap::new();
            for (id, v, write) in ops {
                if write {
                    want.insert(id.clone(), v);
                    kept.insert(&id, v);
                    held.push(id.clone());
                    let at = held.len() - 1;
                    by_event.insert(&id, at, |&i| held[i].as_str());
                    by_event_want.insert(id.clone(), at);
                }
                prop_assert_eq!(kept.get(&id), want.get(&id));
                prop_assert_eq!(by_event.get(&id, |&i| held[i].as_str()), by_event_want.get(&id));
            }
            for (id, v) in &want {
                prop_assert_eq!(kept.get(id), Some(v));
            }
        }
    }
}
