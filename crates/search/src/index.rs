//! [`Bm25Index`]: the tantivy index on disk (or in RAM for tests), its single writer
//! [`Bm25Writer`], and search.
//!
//! Every call here blocks: opening, `upsert` (may wait on the indexing queue),
//! `commit_with_payload` (fsyncs, tens of ms), `search` (sub-ms to ms). An async caller
//! (the BM25 indexer and query actors) runs them in `tokio::task::spawn_blocking`.
//!
//! The reader reloads manually, right after each commit of [`Bm25Writer`], so a search
//! that starts after `commit_with_payload` returns sees that commit. A writer in another
//! process is not seen until [`Bm25Index::reload`].

use std::path::Path;

use crate::paced::PacedDirectory;
use memory_text::truncate_bytes;
use tantivy::collector::{Count, DocSetCollector, TopDocs};
use tantivy::directory::Directory;
use tantivy::query::TermQuery;
use tantivy::schema::{IndexRecordOption, Value};
use tantivy::snippet::SnippetGenerator;
use tantivy::{Index, IndexReader, IndexWriter, ReloadPolicy, Searcher, TantivyDocument, Term};

use crate::analyzer::{MEMORY_EN, MemoryEnTokenizer};
use crate::query::Bm25Query;
use crate::query::DocSelector;
use crate::schema::{Bm25Schema, DocType, SearchDoc, doc_key};
use crate::{Result, SearchError};

/// How far past the cut [`Bm25Index::search`] looks to settle a tie that straddles it.
const TIE_WINDOW: usize = 256;

/// tantivy's file naming the committed segments.
pub const META_FILE: &str = "meta.json";

/// An index's last commit, pinned for a snapshot ([`Bm25Index::committed_files`]):
/// while it lives, tantivy's garbage collection deletes none of its files.
pub struct CommittedFiles {
    /// The bytes of `meta.json` as read: write them as the copy's `meta.json`.
    pub meta: Vec<u8>,
    /// The files of the segments `meta` names.
    pub files: Vec<String>,
    /// The commit's payload.
    pub payload: Option<String>,
    _lock: tantivy::directory::DirectoryLock,
}

/// The BM25 index: schema, tantivy index and a reader. Cheap to share behind an `Arc`;
/// searching takes `&self`.
#[derive(Clone)]
pub struct Bm25Index {
    index: Index,
    reader: IndexReader,
    schema: Bm25Schema,
    memory_budget_bytes: usize,
}

impl std::fmt::Debug for Bm25Index {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("Bm25Index")
            .field("memory_budget_bytes", &self.memory_budget_bytes)
            .finish_non_exhaustive()
    }
}

/// One search hit.
#[derive(Clone, Debug, PartialEq)]
pub struct Hit {
    /// The record's id.
    pub doc_id: String,
    /// What the record is.
    pub doc_type: DocType,
    /// The TOC level, for TOC nodes.
    pub level: Option<String>,
    /// The tenant.
    pub project_id: String,
    /// The session, when the record has one.
    pub session_id: Option<String>,
    /// The stored text, or a fragment of it when the query asked for snippets.
    pub text: String,
    /// When the record happened, ms since the Unix epoch.
    pub timestamp_ms: u64,
    /// The BM25 score (higher is better); comparable only within one search.
    pub score: f32,
}

/// The result of [`Bm25Index::search`].
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SearchResults {
    /// The best hits, best first, at most `limit`.
    pub hits: Vec<Hit>,
    /// How many documents match in all.
    pub total_hits: u64,
}

/// Live document counts per [`DocType`] (shared with the vector index, defined in
/// `memory-types`).
pub use memory_types::DocCounts;

impl Bm25Index {
    /// Opens the index in `path`, creating the directory and an empty index if needed.
    /// `memory_budget_bytes` is the writer's indexing memory (tantivy wants at least
    /// 15 MB per indexing thread; a smaller budget gets fewer threads, and below 15 MB
    /// [`Bm25Index::writer`] fails).
    ///
    /// A directory that holds an index with another schema is an error
    /// ([`SearchError::Tantivy`]); the caller rebuilds. Writer locks are OS file locks,
    /// released when a process dies, so a crashed writer leaves no stale lock behind.
    pub fn open_or_create(path: &Path, memory_budget_bytes: usize) -> Result<Self> {
        std::fs::create_dir_all(path).map_err(|error| SearchError::OpenDirectory {
            path: path.display().to_string(),
            message: error.to_string(),
        })?;
        // New files go to disk in steps, so a segment never reaches the device in one
        // burst for the log's next fsync to wait behind (`paced.rs`).
        let directory = PacedDirectory::open(path)
            .map_err(|error| SearchError::open_directory(path, &error))?;
        let schema = Bm25Schema::new();
        let index = Index::open_or_create(directory, schema.schema.clone())?;
        Self::from_index(index, schema, memory_budget_bytes)
    }

    /// An empty index in memory, for tests and benchmarks.
    pub fn create_in_ram(memory_budget_bytes: usize) -> Result<Self> {
        let schema = Bm25Schema::new();
        let index = Index::create_in_ram(schema.schema.clone());
        Self::from_index(index, schema, memory_budget_bytes)
    }

    fn from_index(index: Index, schema: Bm25Schema, memory_budget_bytes: usize) -> Result<Self> {
        index
            .tokenizers()
            .register(MEMORY_EN, MemoryEnTokenizer::analyzer());
        let reader = index
            .reader_builder()
            .reload_policy(ReloadPolicy::Manual)
            .try_into()?;
        Ok(Self {
            index,
            reader,
            schema,
            memory_budget_bytes,
        })
    }

    /// The schema and field handles.
    #[must_use]
    pub fn schema(&self) -> &Bm25Schema {
        &self.schema
    }

    /// The index writer. There is one per index at a time: a second call while the first
    /// writer lives (in this or another process) is a `LockFailure`
    /// ([`SearchError::Tantivy`]).
    pub fn writer(&self) -> Result<Bm25Writer> {
        let writer = self
            .index
            .writer::<TantivyDocument>(self.memory_budget_bytes)?;
        let writer = Bm25Writer {
            writer,
            reader: self.reader.clone(),
            schema: self.schema.clone(),
        };
        writer.spend_commit_opstamp();
        Ok(writer)
    }

    /// The payload of the last commit ([`Bm25Writer::commit_with_payload`]), `None` for an
    /// index never committed with one. Read from disk, so it is the durable value.
    pub fn last_payload(&self) -> Result<Option<String>> {
        Ok(self.index.load_metas()?.payload)
    }

    /// The last commit of this index (whose directory is `dir`) as a snapshot needs it:
    /// the bytes of `meta.json`, the names of the files of every segment it names
    /// (`<segment uuid>.*`) and its payload, with tantivy's meta lock held
    /// ([`CommittedFiles`]) so no garbage collection deletes those files until the
    /// caller has linked them. `meta.json` is read once: a merge that ends meanwhile
    /// rewrites the file on disk, but the snapshot keeps the bytes read here, which name
    /// exactly the files listed. Uncommitted segments and writer locks are left out.
    pub fn committed_files(&self, dir: &Path) -> Result<CommittedFiles> {
        let lock = self
            .index
            .directory()
            .acquire_lock(&tantivy::directory::META_LOCK)
            .map_err(|error| SearchError::OpenDirectory {
                path: dir.display().to_string(),
                message: format!("cannot take the meta lock: {error}"),
            })?;
        let unreadable = |message: String| SearchError::OpenDirectory {
            path: dir.join(META_FILE).display().to_string(),
            message,
        };
        let meta = std::fs::read(dir.join(META_FILE)).map_err(|e| unreadable(e.to_string()))?;
        let parsed: serde_json::Value =
            serde_json::from_slice(&meta).map_err(|e| unreadable(e.to_string()))?;
        let segments: std::collections::HashSet<String> = parsed["segments"]
            .as_array()
            .ok_or_else(|| unreadable("no segments".to_owned()))?
            .iter()
            .filter_map(|segment| segment["segment_id"].as_str())
            .map(|id| id.replace('-', ""))
            .collect();
        let payload = parsed["payload"].as_str().map(str::to_owned);
        let entries = std::fs::read_dir(dir).map_err(|error| SearchError::OpenDirectory {
            path: dir.display().to_string(),
            message: error.to_string(),
        })?;
        let mut files = Vec::new();
        for entry in entries {
            let name = entry
                .map_err(|error| SearchError::OpenDirectory {
                    path: dir.display().to_string(),
                    message: error.to_string(),
                })?
                .file_name()
                .to_string_lossy()
                .into_owned();
            let stem = name.split('.').next().unwrap_or_default();
            if segments.contains(stem) {
                files.push(name);
            }
        }
        files.sort();
        Ok(CommittedFiles {
            meta,
            files,
            payload,
            _lock: lock,
        })
    }

    /// Makes searches see the latest commit, e.g. one made by another process.
    /// Commits of this index's own [`Bm25Writer`] are seen without it.
    pub fn reload(&self) -> Result<()> {
        Ok(self.reader.reload()?)
    }

    /// Live (not deleted) documents, all types.
    #[must_use]
    pub fn num_docs(&self) -> u64 {
        self.reader.searcher().num_docs()
    }

    /// Live documents per type, all projects.
    pub fn doc_counts(&self) -> Result<DocCounts> {
        let searcher = self.reader.searcher();
        let mut counts = DocCounts::default();
        for doc_type in DocType::ALL {
            let query = TermQuery::new(
                Term::from_field_text(self.schema.doc_type, doc_type.as_str()),
                IndexRecordOption::Basic,
            );
            counts.set(doc_type, searcher.search(&query, &Count)? as u64);
        }
        Ok(counts)
    }

    /// The best `limit` hits for `query`, best first, and the number of matches. A
    /// `limit` of 0 only counts.
    pub fn search(&self, query: &Bm25Query, limit: usize) -> Result<SearchResults> {
        let searcher = self.reader.searcher();
        let tantivy_query = query.to_tantivy(&self.schema);
        if limit == 0 {
            let total_hits = searcher.search(&*tantivy_query, &Count)? as u64;
            return Ok(SearchResults {
                hits: Vec::new(),
                total_hits,
            });
        }
        // One more than asked tells whether equal scores straddle the cut.
        let (mut top_docs, total_hits) = searcher.search(
            &*tantivy_query,
            &(TopDocs::with_limit(limit + 1).order_by_score(), Count),
        )?;
        if top_docs.len() > limit && top_docs[limit].0 == top_docs[limit - 1].0 {
            top_docs = self.settle_tie_at_cut(&searcher, &*tantivy_query, limit)?;
        }
        top_docs.truncate(limit);
        let snippet_generator_opt = match query.snippet_max_chars_opt() {
            Some(max_chars) => {
                let mut generator =
                    SnippetGenerator::create(&searcher, &*tantivy_query, self.schema.text)?;
                generator.set_max_num_chars(max_chars);
                Some(generator)
            }
            None => None,
        };
        let mut hits = Vec::with_capacity(top_docs.len());
        for (score, doc_address) in top_docs {
            let document: TantivyDocument = searcher.doc(doc_address)?;
            let mut hit = self.hit_of(&document, score)?;
            if let Some(generator) = &snippet_generator_opt {
                let snippet = generator.snippet(&hit.text);
                let fragment = if snippet.is_empty() {
                    truncate_bytes(&hit.text, query.snippet_max_chars_opt().unwrap_or(0))
                } else {
                    snippet.fragment()
                };
                hit.text = fragment.to_owned();
            }
            hits.push(hit);
        }
        // Equal scores in a stable order (newer first, then by id) rather than by where
        // the documents sit in the index, which differs between replicas and rebuilds.
        hits.sort_by(|a, b| {
            b.score
                .total_cmp(&a.score)
                .then(b.timestamp_ms.cmp(&a.timestamp_ms))
                .then_with(|| a.doc_id.cmp(&b.doc_id))
        });
        Ok(SearchResults {
            hits,
            total_hits: total_hits as u64,
        })
    }

    /// The best `limit` hits when equal scores straddle the cut: which of the tied
    /// documents make it is decided by time (newer first) and id, not by where they sit
    /// in the index — so replicas, a rebuilt index and a restored backup return the same
    /// set. Looks at most [`TIE_WINDOW`] hits past the cut (a larger tie keeps index
    /// order beyond it).
    fn settle_tie_at_cut(
        &self,
        searcher: &Searcher,
        query: &dyn tantivy::query::Query,
        limit: usize,
    ) -> Result<Vec<(f32, tantivy::DocAddress)>> {
        let mut top_docs = searcher.search(
            query,
            &TopDocs::with_limit(limit + TIE_WINDOW).order_by_score(),
        )?;
        let boundary = top_docs[limit - 1].0;
        let first_tied = top_docs
            .iter()
            .position(|(score, _)| *score == boundary)
            .unwrap_or(limit - 1);
        let mut tied = Vec::new();
        for (score, address) in top_docs.drain(first_tied..) {
            if score != boundary {
                break;
            }
            let document: TantivyDocument = searcher.doc(address)?;
            let timestamp_ms = document
                .get_first(self.schema.timestamp_ms)
                .and_then(|value| value.as_u64())
                .unwrap_or(0);
            let doc_id = optional_text(&document, self.schema.doc_id).unwrap_or_default();
            tied.push((timestamp_ms, doc_id, address));
        }
        tied.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
        top_docs.extend(
            tied.into_iter()
                .take(limit - first_tied)
                .map(|(_, _, address)| (boundary, address)),
        );
        Ok(top_docs)
    }

    /// How many live documents `selector` matches.
    pub fn count_matching(&self, selector: &DocSelector) -> Result<u64> {
        let query = crate::query::selector_query(selector, &self.schema);
        Ok(self.reader.searcher().search(&*query, &Count)? as u64)
    }

    /// Every live document of the current commit, as stored (score 0, full text), in
    /// no particular order: what `admin verify` compares with the documents the log
    /// implies. Reads every stored document, so it costs a full scan of the index.
    pub fn documents(&self) -> Result<Vec<Hit>> {
        let searcher = self.reader.searcher();
        let addresses = searcher.search(&tantivy::query::AllQuery, &DocSetCollector)?;
        let mut documents = Vec::with_capacity(addresses.len());
        for address in addresses {
            let document: TantivyDocument = searcher.doc(address)?;
            documents.push(self.hit_of(&document, 0.0)?);
        }
        Ok(documents)
    }

    /// A searcher on the current commit, for callers that need tantivy directly.
    #[must_use]
    pub fn searcher(&self) -> Searcher {
        self.reader.searcher()
    }

    fn hit_of(&self, document: &TantivyDocument, score: f32) -> Result<Hit> {
        let text_of = |field, name: &'static str| -> Result<String> {
            optional_text(document, field).ok_or(SearchError::CorruptDocument { field: name })
        };
        let doc_type_text = text_of(self.schema.doc_type, "doc_type")?;
        let doc_type = doc_type_text
            .parse()
            .map_err(|_| SearchError::CorruptDocument { field: "doc_type" })?;
        let timestamp_ms = document
            .get_first(self.schema.timestamp_ms)
            .and_then(|value| value.as_u64())
            .ok_or(SearchError::CorruptDocument {
                field: "timestamp_ms",
            })?;
        Ok(Hit {
            doc_id: text_of(self.schema.doc_id, "doc_id")?,
            doc_type,
            level: optional_text(document, self.schema.level),
            project_id: text_of(self.schema.project_id, "project_id")?,
            session_id: optional_text(document, self.schema.session_id),
            text: text_of(self.schema.text, "text")?,
            timestamp_ms,
            score,
        })
    }
}

fn optional_text(document: &TantivyDocument, field: tantivy::schema::Field) -> Option<String> {
    document
        .get_first(field)
        .and_then(|value| value.as_str().map(str::to_owned))
}

/// The single writer of a [`Bm25Index`]. Changes are invisible until
/// [`Bm25Writer::commit_with_payload`]; dropping the writer without committing discards
/// them.
pub struct Bm25Writer {
    writer: IndexWriter<TantivyDocument>,
    reader: IndexReader,
    schema: Bm25Schema,
}

impl std::fmt::Debug for Bm25Writer {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.debug_struct("Bm25Writer").finish_non_exhaustive()
    }
}

impl Bm25Writer {
    /// Adds `doc`, replacing any document with the same key (project, type, id) by a
    /// delete and an add, applied in order at commit. Applying the same document twice
    /// leaves one copy.
    pub fn upsert(&mut self, doc: &SearchDoc) -> Result<()> {
        self.writer
            .delete_term(Term::from_field_text(self.schema.doc_key, &doc.key()));
        self.writer.add_document(self.schema.to_document(doc))?;
        Ok(())
    }

    /// Adds `doc` without removing an existing document with its key: for filling a new,
    /// empty index (a rebuild), where there is nothing to replace and the delete that
    /// [`Bm25Writer::upsert`] queues per document would only cost time at commit. Adding
    /// a key twice leaves two copies.
    pub fn add(&mut self, doc: &SearchDoc) -> Result<()> {
        self.writer.add_document(self.schema.to_document(doc))?;
        Ok(())
    }

    /// Removes the document of this project, type and id, if any.
    pub fn delete(&mut self, project_id: &str, doc_type: DocType, doc_id: &str) {
        self.writer.delete_term(Term::from_field_text(
            self.schema.doc_key,
            &doc_key(project_id, doc_type, doc_id),
        ));
    }

    /// Removes every document `selector` matches, all projects; returns how many there
    /// were at the last commit (documents added since are removed too but not counted,
    /// so the delete runs even when that count is 0).
    pub fn delete_matching(&mut self, selector: &DocSelector) -> Result<u64> {
        let query = crate::query::selector_query(selector, &self.schema);
        let count = self.reader.searcher().search(&*query, &Count)? as u64;
        self.writer.delete_query(query)?;
        Ok(count)
    }

    /// Makes every change since the last commit durable and searchable, atomically with
    /// `payload` (the consumer's outbox cursor), then reloads the reader. Returns the
    /// commit's opstamp.
    pub fn commit_with_payload(&mut self, payload: &str) -> Result<u64> {
        let mut prepared = self.writer.prepare_commit()?;
        prepared.set_payload(payload);
        let opstamp = prepared.commit()?;
        self.reader.reload()?;
        Ok(opstamp)
    }

    /// Merges every committed segment into one, dropping deleted documents for good,
    /// and waits for it (the PRD's post-prune compaction). Call it after a commit; a
    /// no-op for a single segment without deletions. Later commits add segments again,
    /// which the merge policy merges in the background as usual.
    pub fn compact(&mut self) -> Result<()> {
        let segment_ids = self.writer.index().searchable_segment_ids()?;
        let has_deletes = self
            .reader
            .searcher()
            .segment_readers()
            .iter()
            .any(|segment| segment.num_deleted_docs() > 0);
        if segment_ids.len() > 1 || has_deletes {
            self.writer.merge(&segment_ids).wait()?;
            self.reader.reload()?;
        }
        Ok(())
    }

    /// Discards the changes since the last commit.
    pub fn rollback(&mut self) -> Result<()> {
        self.writer.rollback()?;
        self.spend_commit_opstamp();
        Ok(())
    }

    /// Spends the opstamp tantivy (0.27) gives the first operation of a new or rolled
    /// back writer, the opstamp of the last commit, on a delete that matches nothing (no
    /// key is empty). A merge started by the writer's first segment targets that same
    /// opstamp: it applies a delete holding it to the segments it merges, except those
    /// whose deletes the last commit wrote (their delete opstamp equals the target, so
    /// tantivy takes them as up to date), and then keeps the delete cursor of its first
    /// segment, past the delete. An upsert as that first operation then got its old
    /// version back beside the new one once the merge ended (the crash soak's stale BM25
    /// TOC node; test `an_upsert_right_after_reopening_survives_a_merge_started_by_its_own_flush`).
    /// Every later operation has an opstamp above the commit's, which no merge targets
    /// before a commit covers it.
    fn spend_commit_opstamp(&self) {
        self.writer
            .delete_term(Term::from_field_text(self.schema.doc_key, ""));
    }

    /// Waits for background merges and releases the writer lock.
    pub fn wait_merging_threads(self) -> Result<()> {
        self.writer.wait_merging_threads()?;
        Ok(())
    }
}

#[cfg(test)]
#[path = "index_tests.rs"]
mod tests;
