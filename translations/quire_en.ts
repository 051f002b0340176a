<?xml version="1.0" encoding="utf-8"?>
<!DOCTYPE TS>
<TS version="2.1" language="en">
<context>
    <name>main</name>
    <message>
        <source>Scanned volumes to proofread, exportable text</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Project file to open or create.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Create the project from the given scans.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Start (or resume) transcription at once.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Page to show (1-based).</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Save a screenshot of the window and quit.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>light, dark or system (overrides the setting).</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Interface language, e.g. zh_CN.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>With --screenshot: find:WORDS, history, reread, pages or regions (the view to capture).</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Type this text into the editor (tests).</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>A project, or scans with --new.</source>
        <translation type="unfinished"></translation>
    </message>
</context>
<context>
    <name>quire::ui::EngineBox</name>
    <message>
        <source>Automatic</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Tesseract</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>PP-OCRv4 (neural; Chinese and mixed text)</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Quire reader (whole-volume decoder over PP-OCRv4)</source>
        <translation type="unfinished"></translation>
    </message>
</context>
<context>
    <name>quire::ui::ExportDialog</name>
    <message>
        <source>Export Book</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Word document (DOCX)</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Markdown</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Plain text</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Searchable PDF</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>hOCR</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>ALTO XML (one file per page)</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>PAGE XML (one file per page)</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Page markers ([p. 12]) in DOCX, Markdown and text</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Where each page begins, with the number printed on it (else its place in the volume), so passages can be cited</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Searchable PDF as PDF/A-2b (for long-term archiving)</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>ISO 19005-2: the metadata and colour profile an archive asks for; every page is stored as an image</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Choose…</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Export to folder</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Folder:</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Export</source>
        <translation type="unfinished"></translation>
    </message>
</context>
<context>
    <name>quire::ui::FindPanel</name>
    <message numerus="yes">
        <source>%n hit(s)</source>
        <translation>
            <numerusform>%n hit</numerusform>
            <numerusform>%n hits</numerusform>
        </translation>
    </message>
    <message numerus="yes">
        <source>%n page(s)</source>
        <translation>
            <numerusform>%n page</numerusform>
            <numerusform>%n pages</numerusform>
        </translation>
    </message>
    <message numerus="yes">
        <source>Replaced %n hit(s)</source>
        <translation>
            <numerusform>Replaced %n hit</numerusform>
            <numerusform>Replaced %n hits</numerusform>
        </translation>
    </message>
    <message>
        <source>Find in the book</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Replace with</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Plain text</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Whole words</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Regular expression</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>A regular expression&apos;s replacement may use \1 to \9 for its groups</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Match case</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Find All</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Replace</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Replace All</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Undo Replace All</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>p. %1, line %2: %3</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Not found in the book</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>The page changed since the search; search again</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Replace All undone</source>
        <translation type="unfinished"></translation>
    </message>
</context>
<context>
    <name>quire::ui::LanguagePicker</name>
    <message>
        <source>English</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>German</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>German (Fraktur)</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>French</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Spanish</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Italian</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Dutch</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Portuguese</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Latin</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Russian</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Polish</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Swedish</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Danish</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Chinese (simplified)</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Chinese (traditional)</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Japanese</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Korean</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>%1 (%2): not installed, package %3</source>
        <translation type="unfinished"></translation>
    </message>
</context>
<context>
    <name>quire::ui::MainWindow</name>
    <message>
        <source>Exporting the book…</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Cancel</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Longest GUI stall during this run: %1 ms</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>The scan of this page cannot be shown: %1</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>All pages</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Flagged</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Failed</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Not proofread</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Pages</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Your correction could not be saved: %1</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Find and Replace</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>The word could not be added to the project&apos;s dictionary: %1</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>“%1” added to the project&apos;s dictionary</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Log</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Longest GUI stall during this run: -</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Engine</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>&amp;File</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>&amp;New Project from Files…</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>New Project from &amp;Folder…</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>&amp;Open Project…</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Open &amp;Recent</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>&amp;Export Book…</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Project &amp;Properties…</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>&amp;Quit</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>&amp;Edit</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>&amp;Undo</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>&amp;Redo</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>&amp;Find and Replace in Book…</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Page &amp;History…</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Mark Page &amp;Proofread</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>&amp;Next Flagged Page</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>P&amp;revious Flagged Page</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Next &amp;Doubtful Word</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>No doubtful word in the book</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Next Page</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Previous Page</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>&amp;Settings…</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>&amp;Pages</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Read &amp;Again…</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>&amp;View</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Fit &amp;Width</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Fit &amp;Page</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>&amp;Actual Size</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Zoom &amp;In</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Zoom &amp;Out</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>&amp;Run</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>&amp;Start / Resume</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>&amp;Pause</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>&amp;Cancel</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Read Failed Page &amp;Again</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>S&amp;kip Queued Page</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>&amp;Help</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>&amp;About Quire</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>About Quire</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>&lt;b&gt;Quire&lt;/b&gt; %1&lt;br&gt;Scanned volumes to proofread, exportable text.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Main</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source> [transcribing]</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source> [%1 pages to do]</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source> [read-only]</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>warning: </source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Quire</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Cannot add %1: %2</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>%1 already exists; open it instead, or choose another name.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Restore the backup?</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>%1 is damaged. Its newest sound backup was taken at %2. Put the backup in place? The damaged file is kept beside it, and corrections made after the backup are lost from the project.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Cannot restore %1: %2</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Restored %1 from the backup taken at %2; the damaged file is kept as %3.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Cannot open %1: %2</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>%1 is read-only here; corrections cannot be saved.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Resume transcription?</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>The last run of this project stopped with %1 pages still to do. Resume it now?</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Page %1: %2</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Flagged for proofreading</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Flagged for proofreading: %1</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>No flagged page after this one</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>No flagged page before this one</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Wait until the run ends (or cancel it) to change which pages it reads.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Page %1 queued again; Start reads it.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Page %1 skipped; runs leave it alone until it is read again.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Wait until the run ends (or cancel it) to read pages again.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Transcription started (%1, languages %2)</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Paused: pages in progress finish, no new page starts</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Resumed</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Cancelling: pages in progress are finished and saved</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>%1/%2 pages · %3 flagged · %4 failed · %5 pages/min · ETA %6</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>The run stopped: %1</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Cancelled: %1. Start again to resume.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Finished: %1</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Longest GUI stall during the run: %1 ms</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Export failed: %1</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Exported %1 to %2</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Choose scans</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Scans (*.pdf *.tif *.tiff *.png *.jpg *.jpeg *.bmp);;All files (*)</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Save the new project as</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Quire projects (*.quire)</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Choose a folder of page images</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Open project</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>The page could not be reverted: %1</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Page %1 reverted to version %2</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>The properties could not be saved: %1</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>&amp;Layout</source>
        <translation type="unfinished"></translation>
    </message>
</context>
<context>
    <name>quire::ui::PageArranger</name>
    <message numerus="yes">
        <source>added %n page(s) at the end of the book</source>
        <translation>
            <numerusform>added %n page at the end of the book</numerusform>
            <numerusform>added %n pages at the end of the book</numerusform>
        </translation>
    </message>
    <message>
        <source>Rotate &amp;Clockwise</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Rotate C&amp;ounterclockwise</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Rotate &amp;180°</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>&amp;Remove from Book</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Move &amp;Up</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Move &amp;Down</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>&amp;Add Scans After This Page…</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Add scans</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Scans (*.pdf *.tif *.tiff *.png *.jpg *.jpeg *.bmp);;All files (*)</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>U&amp;ndo Page Change</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Put &amp;Back a Removed Page</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>%1, page %2</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>U&amp;ndo Page Change: %1</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Wait until the run ends (or cancel it) to rearrange the pages.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>; Run → Start reads it again the right way up (its corrections stay)</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>These scans are in the project already.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>undone: %1</source>
        <translation type="unfinished"></translation>
    </message>
</context>
<context>
    <name>quire::ui::PageEditor</name>
    <message>
        <source>No suggestions</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Add “%1” to the Project Dictionary</source>
        <translation type="unfinished"></translation>
    </message>
</context>
<context>
    <name>quire::ui::PageHistoryDialog</name>
    <message>
        <source>Page %1: History</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Engine reading</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Earlier reading</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Correction %1</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Correction %1 (set aside for a new reading)</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>current</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>From this version to the current text (struck: removed since; underlined: added since):</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>&amp;Revert to This Version</source>
        <translation type="unfinished"></translation>
    </message>
</context>
<context>
    <name>quire::ui::PageListDelegate</name>
    <message>
        <source>queued</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>running</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>done</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>flagged</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>failed</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>proofread</source>
        <translation type="unfinished"></translation>
    </message>
</context>
<context>
    <name>quire::ui::PageListModel</name>
    <message>
        <source>Page %1</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>, page %1</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>, turned %1° clockwise</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>confidence %1</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Flagged: %1</source>
        <translation type="unfinished"></translation>
    </message>
</context>
<context>
    <name>quire::ui::PropertiesDialog</name>
    <message>
        <source>Project Properties</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>A BCP 47 tag such as en, de or zh-Hans; empty: the language the pages were read in</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>&amp;Title:</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>&amp;Author:</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>&amp;Language:</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Written into the metadata of every export (DOCX, searchable PDF, hOCR).</source>
        <translation type="unfinished"></translation>
    </message>
</context>
<context>
    <name>quire::ui::RegionLayer</name>
    <message>
        <source>Text</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Heading</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Marginal note</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Table</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Image</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Ignore</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Draw two regions or more to set their reading order.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Click the regions in reading order (%1 to go).</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Reading order set.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Reading order left as it was clicked so far.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Read &amp;Earlier</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Read &amp;Later</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>&amp;Delete Region</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Read This Region &amp;Again…</source>
        <translation type="unfinished"></translation>
    </message>
</context>
<context>
    <name>quire::ui::RegionTools</name>
    <message>
        <source>Draw &amp;Regions</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>New Region &amp;Kind</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Set Reading &amp;Order by Clicking</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Remove the Page&apos;s Re&amp;gions</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Read the Page in Its Regions…</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>The page&apos;s regions cannot be read: %1</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>The regions could not be saved: %1</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Page %1: no regions; the engine finds its layout at the next reading.</source>
        <translation type="unfinished"></translation>
    </message>
    <message numerus="yes">
        <source>Page %1: %n region(s) saved; Layout ▸ Read the Page in Its Regions reads it in them.</source>
        <translation type="unfinished">
            <numerusform></numerusform>
            <numerusform></numerusform>
        </translation>
    </message>
    <message>
        <source>Drag on the scan to draw a region; drag a region to move it, its edge to resize it; right-click it to change its kind or place in the reading order; Delete removes it, Ctrl+Z undoes</source>
        <translation type="unfinished"></translation>
    </message>
</context>
<context>
    <name>quire::ui::RereadDialog</name>
    <message numerus="yes">
        <source>Read %n page(s) again with these settings. What the pages read now is kept in their history.</source>
        <translation>
            <numerusform>Read %n page again with these settings. What the page reads now is kept in its history.</numerusform>
            <numerusform>Read %n pages again with these settings. What the pages read now is kept in their history.</numerusform>
        </translation>
    </message>
    <message numerus="yes">
        <source>%n of these pages have your corrections</source>
        <translation>
            <numerusform>%n of these pages has your corrections</numerusform>
            <numerusform>%n of these pages have your corrections</numerusform>
        </translation>
    </message>
    <message>
        <source>Read Pages Again</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Recognition engine:</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Languages:</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Keep my corrections as their text (the new reading is kept as a version)</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Use the new reading as their text (my corrections stay in the page history)</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>&amp;Read Again</source>
        <translation type="unfinished"></translation>
    </message>
</context>
<context>
    <name>quire::ui::RunChart</name>
    <message numerus="yes">
        <source>%n page(s)</source>
        <translation>
            <numerusform>%n page</numerusform>
            <numerusform>%n pages</numerusform>
        </translation>
    </message>
    <message>
        <source>Throughput and memory appear here during a run</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>p/min</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>MiB</source>
        <translation type="unfinished"></translation>
    </message>
</context>
<context>
    <name>quire::ui::SettingsDialog</name>
    <message>
        <source>Settings</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Recognition engine:</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Installed model: %1</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>No installed model found</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Browse…</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Reader model folder (config.json and model.safetensors)</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Reader model:</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Tick the book&apos;s languages, the main one first; greyed ones need their package installed</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Languages:</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>one per core</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>CPU threads:</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>CPU</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>GPU: %1</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Device (PP-OCR and reader engines):</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Pages whose mean word confidence is below this are flagged for proofreading</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Flag pages below confidence:</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>PDF rendering (dpi):</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Straighten skewed pages</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Even out uneven lighting</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Binarise before recognition</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Split two-page spreads</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Preprocessing:</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Follow the system</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Light</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Dark</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Theme:</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Interface language:</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Theme and interface language apply the next time Quire starts.</source>
        <translation type="unfinished"></translation>
    </message>
</context>
<context>
    <name>quire::ui::TranscriptionWorker</name>
    <message>
        <source>Page %1 failed: %2</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>%1 of %2 pages done, %3 flagged, %4 failed</source>
        <translation type="unfinished"></translation>
    </message>
</context>
</TS>
