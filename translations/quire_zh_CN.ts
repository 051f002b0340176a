<?xml version="1.0" encoding="utf-8"?>
<!DOCTYPE TS>
<TS version="2.1" language="zh_CN">
<context>
    <name>main</name>
    <message>
        <source>Scanned volumes to proofread, exportable text</source>
        <translation>扫描书卷转为可校对、可导出的文本</translation>
    </message>
    <message>
        <source>Project file to open or create.</source>
        <translation>要打开或创建的项目文件。</translation>
    </message>
    <message>
        <source>Create the project from the given scans.</source>
        <translation>用给定的扫描文件创建项目。</translation>
    </message>
    <message>
        <source>Start (or resume) transcription at once.</source>
        <translation>立即开始（或继续）转录。</translation>
    </message>
    <message>
        <source>Page to show (1-based).</source>
        <translation>要显示的页（从 1 开始）。</translation>
    </message>
    <message>
        <source>Save a screenshot of the window and quit.</source>
        <translation>保存窗口截图后退出。</translation>
    </message>
    <message>
        <source>light, dark or system (overrides the setting).</source>
        <translation>light、dark 或 system（覆盖设置）。</translation>
    </message>
    <message>
        <source>Interface language, e.g. zh_CN.</source>
        <translation>界面语言，例如 zh_CN。</translation>
    </message>
    <message>
        <source>Type this text into the editor (tests).</source>
        <translation>在编辑器中输入这段文字（测试用）。</translation>
    </message>
    <message>
        <source>A project, or scans with --new.</source>
        <translation>一个项目，或配合 --new 使用的扫描文件。</translation>
    </message>
    <message>
        <source>With --screenshot: find:WORDS, history, reread, pages or regions (the view to capture).</source>
        <translation>与 --screenshot 一起使用：find:词语、history、reread、pages 或 regions（要截取的视图）。</translation>
    </message>
</context>
<context>
    <name>quire::ui::EngineBox</name>
    <message>
        <source>Automatic</source>
        <translation>自动</translation>
    </message>
    <message>
        <source>Tesseract</source>
        <translation>Tesseract</translation>
    </message>
    <message>
        <source>PP-OCRv4 (neural; Chinese and mixed text)</source>
        <translation>PP-OCRv4（神经网络；中文及中英混排）</translation>
    </message>
    <message>
        <source>Quire reader (whole-volume decoder over PP-OCRv4)</source>
        <translation>Quire 阅读器（基于 PP-OCRv4 的整卷解码器）</translation>
    </message>
</context>
<context>
    <name>quire::ui::ExportDialog</name>
    <message>
        <source>Export Book</source>
        <translation>导出全书</translation>
    </message>
    <message>
        <source>Word document (DOCX)</source>
        <translation>Word 文档（DOCX）</translation>
    </message>
    <message>
        <source>Markdown</source>
        <translation>Markdown</translation>
    </message>
    <message>
        <source>Plain text</source>
        <translation>纯文本</translation>
    </message>
    <message>
        <source>Searchable PDF</source>
        <translation>可搜索 PDF</translation>
    </message>
    <message>
        <source>hOCR</source>
        <translation>hOCR</translation>
    </message>
    <message>
        <source>ALTO XML (one file per page)</source>
        <translation>ALTO XML（每页一个文件）</translation>
    </message>
    <message>
        <source>PAGE XML (one file per page)</source>
        <translation>PAGE XML（每页一个文件）</translation>
    </message>
    <message>
        <source>Choose…</source>
        <translation>选择…</translation>
    </message>
    <message>
        <source>Export to folder</source>
        <translation>导出到文件夹</translation>
    </message>
    <message>
        <source>Folder:</source>
        <translation>文件夹：</translation>
    </message>
    <message>
        <source>Export</source>
        <translation>导出</translation>
    </message>
    <message>
        <source>Page markers ([p. 12]) in DOCX, Markdown and text</source>
        <translation>在 DOCX、Markdown 和纯文本中加入页码标记（[p. 12]）</translation>
    </message>
    <message>
        <source>Where each page begins, with the number printed on it (else its place in the volume), so passages can be cited</source>
        <translation>标出每页开始之处，使用页面上印刷的页码（若无则用其在卷中的位置），便于引用</translation>
    </message>
    <message>
        <source>Searchable PDF as PDF/A-2b (for long-term archiving)</source>
        <translation>可搜索 PDF 采用 PDF/A-2b（用于长期存档）</translation>
    </message>
    <message>
        <source>ISO 19005-2: the metadata and colour profile an archive asks for; every page is stored as an image</source>
        <translation>ISO 19005-2：档案馆要求的元数据和色彩配置文件；每页都以图像保存</translation>
    </message>
</context>
<context>
    <name>quire::ui::FindPanel</name>
    <message>
        <source>Find in the book</source>
        <translation>在全书中查找</translation>
    </message>
    <message>
        <source>Replace with</source>
        <translation>替换为</translation>
    </message>
    <message>
        <source>Plain text</source>
        <translation>纯文本</translation>
    </message>
    <message>
        <source>Whole words</source>
        <translation>全词匹配</translation>
    </message>
    <message>
        <source>Regular expression</source>
        <translation>正则表达式</translation>
    </message>
    <message>
        <source>A regular expression&apos;s replacement may use \1 to \9 for its groups</source>
        <translation>正则表达式的替换文本可用 \1 到 \9 引用其分组</translation>
    </message>
    <message>
        <source>Match case</source>
        <translation>区分大小写</translation>
    </message>
    <message>
        <source>Find All</source>
        <translation>全部查找</translation>
    </message>
    <message>
        <source>Replace</source>
        <translation>替换</translation>
    </message>
    <message>
        <source>Replace All</source>
        <translation>全部替换</translation>
    </message>
    <message>
        <source>Undo Replace All</source>
        <translation>撤销全部替换</translation>
    </message>
    <message>
        <source>p. %1, line %2: %3</source>
        <translation>第 %1 页，第 %2 行：%3</translation>
    </message>
    <message>
        <source>Not found in the book</source>
        <translation>书中未找到</translation>
    </message>
    <message numerus="yes">
        <source>%n hit(s)</source>
        <translation>
            <numerusform>%n 处</numerusform>
        </translation>
    </message>
    <message numerus="yes">
        <source>%n page(s)</source>
        <translation>
            <numerusform>%n 页</numerusform>
        </translation>
    </message>
    <message>
        <source>The page changed since the search; search again</source>
        <translation>搜索之后页面已更改，请重新搜索</translation>
    </message>
    <message numerus="yes">
        <source>Replaced %n hit(s)</source>
        <translation>
            <numerusform>已替换 %n 处</numerusform>
        </translation>
    </message>
    <message>
        <source>Replace All undone</source>
        <translation>已撤销全部替换</translation>
    </message>
</context>
<context>
    <name>quire::ui::LanguagePicker</name>
    <message>
        <source>English</source>
        <translation>英语</translation>
    </message>
    <message>
        <source>German</source>
        <translation>德语</translation>
    </message>
    <message>
        <source>German (Fraktur)</source>
        <translation>德语（尖角体）</translation>
    </message>
    <message>
        <source>French</source>
        <translation>法语</translation>
    </message>
    <message>
        <source>Spanish</source>
        <translation>西班牙语</translation>
    </message>
    <message>
        <source>Italian</source>
        <translation>意大利语</translation>
    </message>
    <message>
        <source>Dutch</source>
        <translation>荷兰语</translation>
    </message>
    <message>
        <source>Portuguese</source>
        <translation>葡萄牙语</translation>
    </message>
    <message>
        <source>Latin</source>
        <translation>拉丁语</translation>
    </message>
    <message>
        <source>Russian</source>
        <translation>俄语</translation>
    </message>
    <message>
        <source>Polish</source>
        <translation>波兰语</translation>
    </message>
    <message>
        <source>Swedish</source>
        <translation>瑞典语</translation>
    </message>
    <message>
        <source>Danish</source>
        <translation>丹麦语</translation>
    </message>
    <message>
        <source>Chinese (simplified)</source>
        <translation>中文（简体）</translation>
    </message>
    <message>
        <source>Chinese (traditional)</source>
        <translation>中文（繁体）</translation>
    </message>
    <message>
        <source>Japanese</source>
        <translation>日语</translation>
    </message>
    <message>
        <source>Korean</source>
        <translation>韩语</translation>
    </message>
    <message>
        <source>%1 (%2): not installed, package %3</source>
        <translation>%1（%2）：未安装，软件包 %3</translation>
    </message>
</context>
<context>
    <name>quire::ui::MainWindow</name>
    <message>
        <source>Longest GUI stall during this run: %1 ms</source>
        <translation>本次运行界面最长卡顿：%1 毫秒</translation>
    </message>
    <message>
        <source>The scan of this page cannot be shown: %1</source>
        <translation>无法显示此页的扫描图像：%1</translation>
    </message>
    <message>
        <source>All pages</source>
        <translation>全部页面</translation>
    </message>
    <message>
        <source>Flagged</source>
        <translation>已标记</translation>
    </message>
    <message>
        <source>Failed</source>
        <translation>失败</translation>
    </message>
    <message>
        <source>Not proofread</source>
        <translation>未校对</translation>
    </message>
    <message>
        <source>Pages</source>
        <translation>页面</translation>
    </message>
    <message>
        <source>Your correction could not be saved: %1</source>
        <translation>您的修改无法保存：%1</translation>
    </message>
    <message>
        <source>Log</source>
        <translation>日志</translation>
    </message>
    <message>
        <source>Longest GUI stall during this run: -</source>
        <translation>本次运行界面最长卡顿：-</translation>
    </message>
    <message>
        <source>Engine</source>
        <translation>引擎</translation>
    </message>
    <message>
        <source>&amp;File</source>
        <translation>文件(&amp;F)</translation>
    </message>
    <message>
        <source>&amp;New Project from Files…</source>
        <translation>从文件新建项目(&amp;N)…</translation>
    </message>
    <message>
        <source>New Project from &amp;Folder…</source>
        <translation>从文件夹新建项目(&amp;F)…</translation>
    </message>
    <message>
        <source>&amp;Open Project…</source>
        <translation>打开项目(&amp;O)…</translation>
    </message>
    <message>
        <source>Open &amp;Recent</source>
        <translation>最近打开(&amp;R)</translation>
    </message>
    <message>
        <source>&amp;Export Book…</source>
        <translation>导出全书(&amp;E)…</translation>
    </message>
    <message>
        <source>&amp;Quit</source>
        <translation>退出(&amp;Q)</translation>
    </message>
    <message>
        <source>&amp;Edit</source>
        <translation>编辑(&amp;E)</translation>
    </message>
    <message>
        <source>&amp;Undo</source>
        <translation>撤销(&amp;U)</translation>
    </message>
    <message>
        <source>&amp;Redo</source>
        <translation>重做(&amp;R)</translation>
    </message>
    <message>
        <source>Mark Page &amp;Proofread</source>
        <translation>标记本页已校对(&amp;P)</translation>
    </message>
    <message>
        <source>Next &amp;Doubtful Word</source>
        <translation>下一个存疑的词(&amp;D)</translation>
    </message>
    <message>
        <source>&amp;Next Flagged Page</source>
        <translation>下一个已标记页(&amp;N)</translation>
    </message>
    <message>
        <source>P&amp;revious Flagged Page</source>
        <translation>上一个已标记页(&amp;R)</translation>
    </message>
    <message>
        <source>Next Page</source>
        <translation>下一页</translation>
    </message>
    <message>
        <source>Previous Page</source>
        <translation>上一页</translation>
    </message>
    <message>
        <source>&amp;Settings…</source>
        <translation>设置(&amp;S)…</translation>
    </message>
    <message>
        <source>&amp;View</source>
        <translation>视图(&amp;V)</translation>
    </message>
    <message>
        <source>Fit &amp;Width</source>
        <translation>适合宽度(&amp;W)</translation>
    </message>
    <message>
        <source>Fit &amp;Page</source>
        <translation>适合页面(&amp;P)</translation>
    </message>
    <message>
        <source>&amp;Actual Size</source>
        <translation>实际大小(&amp;A)</translation>
    </message>
    <message>
        <source>Zoom &amp;In</source>
        <translation>放大(&amp;I)</translation>
    </message>
    <message>
        <source>Zoom &amp;Out</source>
        <translation>缩小(&amp;O)</translation>
    </message>
    <message>
        <source>&amp;Run</source>
        <translation>运行(&amp;R)</translation>
    </message>
    <message>
        <source>&amp;Start / Resume</source>
        <translation>开始/继续(&amp;S)</translation>
    </message>
    <message>
        <source>&amp;Pause</source>
        <translation>暂停(&amp;P)</translation>
    </message>
    <message>
        <source>&amp;Cancel</source>
        <translation>取消(&amp;C)</translation>
    </message>
    <message>
        <source>&amp;Help</source>
        <translation>帮助(&amp;H)</translation>
    </message>
    <message>
        <source>&amp;About Quire</source>
        <translation>关于 Quire(&amp;A)</translation>
    </message>
    <message>
        <source>About Quire</source>
        <translation>关于 Quire</translation>
    </message>
    <message>
        <source>&lt;b&gt;Quire&lt;/b&gt; %1&lt;br&gt;Scanned volumes to proofread, exportable text.</source>
        <translation>&lt;b&gt;Quire&lt;/b&gt; %1&lt;br&gt;扫描书卷转为可校对、可导出的文本。</translation>
    </message>
    <message>
        <source>Main</source>
        <translation>主工具栏</translation>
    </message>
    <message>
        <source> [transcribing]</source>
        <translation> [转录中]</translation>
    </message>
    <message>
        <source> [%1 pages to do]</source>
        <translation> [还有 %1 页待处理]</translation>
    </message>
    <message>
        <source> [read-only]</source>
        <translation> [只读]</translation>
    </message>
    <message>
        <source>warning: </source>
        <translation>警告：</translation>
    </message>
    <message>
        <source>Quire</source>
        <translation>Quire</translation>
    </message>
    <message>
        <source>Cannot add %1: %2</source>
        <translation>无法添加 %1：%2</translation>
    </message>
    <message>
        <source>%1 already exists; open it instead, or choose another name.</source>
        <translation>%1 已存在；请直接打开它，或换一个名称。</translation>
    </message>
    <message>
        <source>Cannot open %1: %2</source>
        <translation>无法打开 %1：%2</translation>
    </message>
    <message>
        <source>%1 is read-only here; corrections cannot be saved.</source>
        <translation>%1 在此处为只读；修改无法保存。</translation>
    </message>
    <message>
        <source>Resume transcription?</source>
        <translation>继续转录？</translation>
    </message>
    <message>
        <source>The last run of this project stopped with %1 pages still to do. Resume it now?</source>
        <translation>该项目上次运行中断时还有 %1 页未处理。现在继续吗？</translation>
    </message>
    <message>
        <source>Page %1: %2</source>
        <translation>第 %1 页：%2</translation>
    </message>
    <message>
        <source>No flagged page after this one</source>
        <translation>此页之后没有已标记页</translation>
    </message>
    <message>
        <source>No flagged page before this one</source>
        <translation>此页之前没有已标记页</translation>
    </message>
    <message>
        <source>Transcription started (%1, languages %2)</source>
        <translation>转录已开始（%1，语言 %2）</translation>
    </message>
    <message>
        <source>Paused: pages in progress finish, no new page starts</source>
        <translation>已暂停：进行中的页面会完成，不再开始新页面</translation>
    </message>
    <message>
        <source>Resumed</source>
        <translation>已继续</translation>
    </message>
    <message>
        <source>Cancelling: pages in progress are finished and saved</source>
        <translation>正在取消：进行中的页面会完成并保存</translation>
    </message>
    <message>
        <source>%1/%2 pages · %3 flagged · %4 failed · %5 pages/min · ETA %6</source>
        <translation>%1/%2 页 · %3 页已标记 · %4 页失败 · 每分钟 %5 页 · 预计剩余 %6</translation>
    </message>
    <message>
        <source>The run stopped: %1</source>
        <translation>运行已停止：%1</translation>
    </message>
    <message>
        <source>Cancelled: %1. Start again to resume.</source>
        <translation>已取消：%1。再次开始即可继续。</translation>
    </message>
    <message>
        <source>Finished: %1</source>
        <translation>已完成：%1</translation>
    </message>
    <message>
        <source>Longest GUI stall during the run: %1 ms</source>
        <translation>运行期间界面最长卡顿：%1 毫秒</translation>
    </message>
    <message>
        <source>Exporting the book…</source>
        <translation>正在导出全书…</translation>
    </message>
    <message>
        <source>Cancel</source>
        <translation>取消</translation>
    </message>
    <message>
        <source>Export failed: %1</source>
        <translation>导出失败：%1</translation>
    </message>
    <message>
        <source>Exported %1 to %2</source>
        <translation>已将 %1 导出到 %2</translation>
    </message>
    <message>
        <source>Choose scans</source>
        <translation>选择扫描文件</translation>
    </message>
    <message>
        <source>Scans (*.pdf *.tif *.tiff *.png *.jpg *.jpeg *.bmp);;All files (*)</source>
        <translation>扫描文件 (*.pdf *.tif *.tiff *.png *.jpg *.jpeg *.bmp);;所有文件 (*)</translation>
    </message>
    <message>
        <source>Save the new project as</source>
        <translation>新项目另存为</translation>
    </message>
    <message>
        <source>Quire projects (*.quire)</source>
        <translation>Quire 项目 (*.quire)</translation>
    </message>
    <message>
        <source>Choose a folder of page images</source>
        <translation>选择页面图像所在的文件夹</translation>
    </message>
    <message>
        <source>Open project</source>
        <translation>打开项目</translation>
    </message>
    <message>
        <source>Read Failed Page &amp;Again</source>
        <translation>重新识别失败页(&amp;A)</translation>
    </message>
    <message>
        <source>S&amp;kip Queued Page</source>
        <translation>跳过排队页(&amp;K)</translation>
    </message>
    <message>
        <source>Wait until the run ends (or cancel it) to change which pages it reads.</source>
        <translation>请等待本次运行结束（或取消运行）后再更改要识别的页面。</translation>
    </message>
    <message>
        <source>Page %1 queued again; Start reads it.</source>
        <translation>第 %1 页已重新排队；点击“开始”即可识别。</translation>
    </message>
    <message>
        <source>Page %1 skipped; runs leave it alone until it is read again.</source>
        <translation>第 %1 页已跳过；在重新识别之前，运行不会处理它。</translation>
    </message>
    <message>
        <source>Restore the backup?</source>
        <translation>恢复备份？</translation>
    </message>
    <message>
        <source>%1 is damaged. Its newest sound backup was taken at %2. Put the backup in place? The damaged file is kept beside it, and corrections made after the backup are lost from the project.</source>
        <translation>%1 已损坏。其最新的完好备份创建于 %2。要用该备份替换它吗？损坏的文件会保留在旁边，备份之后所做的校对将不在项目中。</translation>
    </message>
    <message>
        <source>Cannot restore %1: %2</source>
        <translation>无法恢复 %1：%2</translation>
    </message>
    <message>
        <source>Restored %1 from the backup taken at %2; the damaged file is kept as %3.</source>
        <translation>已从 %2 的备份恢复 %1；损坏的文件保存为 %3。</translation>
    </message>
    <message>
        <source>Find and Replace</source>
        <translation>查找和替换</translation>
    </message>
    <message>
        <source>&amp;Find and Replace in Book…</source>
        <translation>在全书中查找和替换(&amp;F)…</translation>
    </message>
    <message>
        <source>Flagged for proofreading</source>
        <translation>已标记待校对</translation>
    </message>
    <message>
        <source>Flagged for proofreading: %1</source>
        <translation>已标记待校对：%1</translation>
    </message>
    <message>
        <source>The word could not be added to the project&apos;s dictionary: %1</source>
        <translation>无法将该词加入项目词典：%1</translation>
    </message>
    <message>
        <source>“%1” added to the project&apos;s dictionary</source>
        <translation>已将“%1”加入项目词典</translation>
    </message>
    <message>
        <source>Project &amp;Properties…</source>
        <translation>项目属性(&amp;P)…</translation>
    </message>
    <message>
        <source>The properties could not be saved: %1</source>
        <translation>无法保存属性：%1</translation>
    </message>
    <message>
        <source>Page &amp;History…</source>
        <translation>页面历史(&amp;H)…</translation>
    </message>
    <message>
        <source>The page could not be reverted: %1</source>
        <translation>无法恢复该页：%1</translation>
    </message>
    <message>
        <source>Page %1 reverted to version %2</source>
        <translation>第 %1 页已恢复为版本 %2</translation>
    </message>
    <message>
        <source>No doubtful word in the book</source>
        <translation>书中没有存疑的词</translation>
    </message>
    <message>
        <source>&amp;Pages</source>
        <translation>页面(&amp;P)</translation>
    </message>
    <message>
        <source>Read &amp;Again…</source>
        <translation>重新识别(&amp;A)…</translation>
    </message>
    <message>
        <source>Wait until the run ends (or cancel it) to read pages again.</source>
        <translation>请等待本次识别结束（或取消它）后再重新识别页面。</translation>
    </message>
    <message>
        <source>&amp;Layout</source>
        <translation>版面(&amp;L)</translation>
    </message>
</context>
<context>
    <name>quire::ui::PageArranger</name>
    <message>
        <source>Rotate &amp;Clockwise</source>
        <translation>顺时针旋转(&amp;C)</translation>
    </message>
    <message>
        <source>Rotate C&amp;ounterclockwise</source>
        <translation>逆时针旋转(&amp;O)</translation>
    </message>
    <message>
        <source>Rotate &amp;180°</source>
        <translation>旋转 180°(&amp;1)</translation>
    </message>
    <message>
        <source>&amp;Remove from Book</source>
        <translation>从书中移除(&amp;R)</translation>
    </message>
    <message>
        <source>Move &amp;Up</source>
        <translation>上移(&amp;U)</translation>
    </message>
    <message>
        <source>Move &amp;Down</source>
        <translation>下移(&amp;D)</translation>
    </message>
    <message>
        <source>&amp;Add Scans After This Page…</source>
        <translation>在此页后添加扫描件(&amp;A)…</translation>
    </message>
    <message>
        <source>Add scans</source>
        <translation>添加扫描件</translation>
    </message>
    <message>
        <source>Scans (*.pdf *.tif *.tiff *.png *.jpg *.jpeg *.bmp);;All files (*)</source>
        <translation>扫描件 (*.pdf *.tif *.tiff *.png *.jpg *.jpeg *.bmp);;所有文件 (*)</translation>
    </message>
    <message>
        <source>U&amp;ndo Page Change</source>
        <translation>撤销页面更改(&amp;N)</translation>
    </message>
    <message>
        <source>U&amp;ndo Page Change: %1</source>
        <translation>撤销页面更改(&amp;N)：%1</translation>
    </message>
    <message>
        <source>Wait until the run ends (or cancel it) to rearrange the pages.</source>
        <translation>请等待本次识别结束（或取消它）后再调整页面。</translation>
    </message>
    <message>
        <source>These scans are in the project already.</source>
        <translation>这些扫描件已在项目中。</translation>
    </message>
    <message numerus="yes">
        <source>added %n page(s) at the end of the book</source>
        <translation>
            <numerusform>已在书末添加 %n 页</numerusform>
        </translation>
    </message>
    <message>
        <source>undone: %1</source>
        <translation>已撤销：%1</translation>
    </message>
    <message>
        <source>; Run → Start reads it again the right way up (its corrections stay)</source>
        <translation>；“运行 → 开始”会按正确方向重新识别（其校对保留）</translation>
    </message>
    <message>
        <source>Put &amp;Back a Removed Page</source>
        <translation>放回已移除的页面(&amp;B)</translation>
    </message>
    <message>
        <source>%1, page %2</source>
        <translation>%1，第 %2 页</translation>
    </message>
</context>
<context>
    <name>quire::ui::PageEditor</name>
    <message>
        <source>No suggestions</source>
        <translation>无建议</translation>
    </message>
    <message>
        <source>Add “%1” to the Project Dictionary</source>
        <translation>将“%1”加入项目词典</translation>
    </message>
</context>
<context>
    <name>quire::ui::PageHistoryDialog</name>
    <message>
        <source>Page %1: History</source>
        <translation>第 %1 页：历史</translation>
    </message>
    <message>
        <source>Engine reading</source>
        <translation>引擎识别结果</translation>
    </message>
    <message>
        <source>Correction %1</source>
        <translation>校正 %1</translation>
    </message>
    <message>
        <source>current</source>
        <translation>当前</translation>
    </message>
    <message>
        <source>From this version to the current text (struck: removed since; underlined: added since):</source>
        <translation>从此版本到当前文本（删除线：此后删除；下划线：此后添加）：</translation>
    </message>
    <message>
        <source>&amp;Revert to This Version</source>
        <translation>恢复为此版本(&amp;R)</translation>
    </message>
    <message>
        <source>Earlier reading</source>
        <translation>先前的识别结果</translation>
    </message>
    <message>
        <source>Correction %1 (set aside for a new reading)</source>
        <translation>校对 %1（已由新的识别结果取代）</translation>
    </message>
</context>
<context>
    <name>quire::ui::PageListDelegate</name>
    <message>
        <source>queued</source>
        <translation>排队中</translation>
    </message>
    <message>
        <source>running</source>
        <translation>处理中</translation>
    </message>
    <message>
        <source>done</source>
        <translation>完成</translation>
    </message>
    <message>
        <source>flagged</source>
        <translation>已标记</translation>
    </message>
    <message>
        <source>failed</source>
        <translation>失败</translation>
    </message>
    <message>
        <source>proofread</source>
        <translation>已校对</translation>
    </message>
</context>
<context>
    <name>quire::ui::PageListModel</name>
    <message>
        <source>Page %1</source>
        <translation>第 %1 页</translation>
    </message>
    <message>
        <source>, page %1</source>
        <translation>，第 %1 页</translation>
    </message>
    <message>
        <source>confidence %1</source>
        <translation>置信度 %1</translation>
    </message>
    <message>
        <source>Flagged: %1</source>
        <translation>已标记：%1</translation>
    </message>
    <message>
        <source>, turned %1° clockwise</source>
        <translation>，已顺时针旋转 %1°</translation>
    </message>
</context>
<context>
    <name>quire::ui::PropertiesDialog</name>
    <message>
        <source>Project Properties</source>
        <translation>项目属性</translation>
    </message>
    <message>
        <source>A BCP 47 tag such as en, de or zh-Hans; empty: the language the pages were read in</source>
        <translation>BCP 47 语言标记，如 en、de 或 zh-Hans；留空则使用识别页面时的语言</translation>
    </message>
    <message>
        <source>&amp;Title:</source>
        <translation>标题(&amp;T)：</translation>
    </message>
    <message>
        <source>&amp;Author:</source>
        <translation>作者(&amp;A)：</translation>
    </message>
    <message>
        <source>&amp;Language:</source>
        <translation>语言(&amp;L)：</translation>
    </message>
    <message>
        <source>Written into the metadata of every export (DOCX, searchable PDF, hOCR).</source>
        <translation>写入每次导出的元数据（DOCX、可搜索 PDF、hOCR）。</translation>
    </message>
</context>
<context>
    <name>quire::ui::RegionLayer</name>
    <message>
        <source>Text</source>
        <translation>正文</translation>
    </message>
    <message>
        <source>Heading</source>
        <translation>标题</translation>
    </message>
    <message>
        <source>Marginal note</source>
        <translation>旁注</translation>
    </message>
    <message>
        <source>Table</source>
        <translation>表格</translation>
    </message>
    <message>
        <source>Image</source>
        <translation>图片</translation>
    </message>
    <message>
        <source>Ignore</source>
        <translation>忽略</translation>
    </message>
    <message>
        <source>Draw two regions or more to set their reading order.</source>
        <translation>请至少画出两个区域，再设定阅读顺序。</translation>
    </message>
    <message>
        <source>Click the regions in reading order (%1 to go).</source>
        <translation>请按阅读顺序点击各区域（还剩 %1 个）。</translation>
    </message>
    <message>
        <source>Reading order set.</source>
        <translation>阅读顺序已设定。</translation>
    </message>
    <message>
        <source>Reading order left as it was clicked so far.</source>
        <translation>阅读顺序保留为目前已点击的顺序。</translation>
    </message>
    <message>
        <source>Read &amp;Earlier</source>
        <translation>提前阅读(&amp;E)</translation>
    </message>
    <message>
        <source>Read &amp;Later</source>
        <translation>推后阅读(&amp;L)</translation>
    </message>
    <message>
        <source>&amp;Delete Region</source>
        <translation>删除区域(&amp;D)</translation>
    </message>
    <message>
        <source>Read This Region &amp;Again…</source>
        <translation>重新识别此区域(&amp;A)…</translation>
    </message>
</context>
<context>
    <name>quire::ui::RegionTools</name>
    <message>
        <source>Draw &amp;Regions</source>
        <translation>绘制区域(&amp;R)</translation>
    </message>
    <message>
        <source>New Region &amp;Kind</source>
        <translation>新区域类型(&amp;K)</translation>
    </message>
    <message>
        <source>Set Reading &amp;Order by Clicking</source>
        <translation>点击设定阅读顺序(&amp;O)</translation>
    </message>
    <message>
        <source>Remove the Page&apos;s Re&amp;gions</source>
        <translation>移除本页的区域(&amp;G)</translation>
    </message>
    <message>
        <source>Read the Page in Its Regions…</source>
        <translation>按区域重新识别本页…</translation>
    </message>
    <message>
        <source>The page&apos;s regions cannot be read: %1</source>
        <translation>无法读取本页的区域：%1</translation>
    </message>
    <message>
        <source>The regions could not be saved: %1</source>
        <translation>无法保存区域：%1</translation>
    </message>
    <message>
        <source>Page %1: no regions; the engine finds its layout at the next reading.</source>
        <translation>第 %1 页：没有区域；下次识别时由引擎自行分析版面。</translation>
    </message>
    <message numerus="yes">
        <source>Page %1: %n region(s) saved; Layout ▸ Read the Page in Its Regions reads it in them.</source>
        <translation>
            <numerusform>第 %1 页：已保存 %n 个区域；“版面 ▸ 按区域重新识别本页”将按这些区域识别。</numerusform>
        </translation>
    </message>
    <message>
        <source>Drag on the scan to draw a region; drag a region to move it, its edge to resize it; right-click it to change its kind or place in the reading order; Delete removes it, Ctrl+Z undoes</source>
        <translation>在扫描图上拖动以绘制区域；拖动区域可移动它，拖动其边缘可调整大小；右键单击可更改其类型或在阅读顺序中的位置；Delete 键删除，Ctrl+Z 撤销</translation>
    </message>
</context>
<context>
    <name>quire::ui::RereadDialog</name>
    <message>
        <source>Read Pages Again</source>
        <translation>重新识别页面</translation>
    </message>
    <message numerus="yes">
        <source>Read %n page(s) again with these settings. What the pages read now is kept in their history.</source>
        <translation>
            <numerusform>用以下设置重新识别 %n 页。页面当前的识别结果会保存在其历史中。</numerusform>
        </translation>
    </message>
    <message>
        <source>Recognition engine:</source>
        <translation>识别引擎：</translation>
    </message>
    <message>
        <source>Languages:</source>
        <translation>语言：</translation>
    </message>
    <message numerus="yes">
        <source>%n of these pages have your corrections</source>
        <translation>
            <numerusform>其中 %n 页有您的校对</numerusform>
        </translation>
    </message>
    <message>
        <source>Keep my corrections as their text (the new reading is kept as a version)</source>
        <translation>保留我的校对作为正文（新的识别结果保存为一个版本）</translation>
    </message>
    <message>
        <source>Use the new reading as their text (my corrections stay in the page history)</source>
        <translation>使用新的识别结果作为正文（我的校对保留在页面历史中）</translation>
    </message>
    <message>
        <source>&amp;Read Again</source>
        <translation>重新识别(&amp;R)</translation>
    </message>
</context>
<context>
    <name>quire::ui::RunChart</name>
    <message>
        <source>Throughput and memory appear here during a run</source>
        <translation>运行时在此显示吞吐量和内存</translation>
    </message>
    <message>
        <source>p/min</source>
        <translation>页/分</translation>
    </message>
    <message>
        <source>MiB</source>
        <translation>MiB</translation>
    </message>
    <message numerus="yes">
        <source>%n page(s)</source>
        <translation>
            <numerusform>%n 页</numerusform>
        </translation>
    </message>
</context>
<context>
    <name>quire::ui::SettingsDialog</name>
    <message>
        <source>Settings</source>
        <translation>设置</translation>
    </message>
    <message>
        <source>Recognition engine:</source>
        <translation>识别引擎：</translation>
    </message>
    <message>
        <source>Languages:</source>
        <translation>语言：</translation>
    </message>
    <message>
        <source>one per core</source>
        <translation>每核一个</translation>
    </message>
    <message>
        <source>CPU threads:</source>
        <translation>CPU 线程：</translation>
    </message>
    <message>
        <source>CPU</source>
        <translation>CPU</translation>
    </message>
    <message>
        <source>GPU: %1</source>
        <translation>GPU：%1</translation>
    </message>
    <message>
        <source>Device (PP-OCR and reader engines):</source>
        <translation>设备（PP-OCR 与阅读器引擎）：</translation>
    </message>
    <message>
        <source>Pages whose mean word confidence is below this are flagged for proofreading</source>
        <translation>平均词置信度低于此值的页面会被标记以供校对</translation>
    </message>
    <message>
        <source>Flag pages below confidence:</source>
        <translation>低于此置信度时标记页面：</translation>
    </message>
    <message>
        <source>PDF rendering (dpi):</source>
        <translation>PDF 渲染分辨率（dpi）：</translation>
    </message>
    <message>
        <source>Straighten skewed pages</source>
        <translation>校正倾斜页面</translation>
    </message>
    <message>
        <source>Even out uneven lighting</source>
        <translation>均衡不均匀的光照</translation>
    </message>
    <message>
        <source>Binarise before recognition</source>
        <translation>识别前二值化</translation>
    </message>
    <message>
        <source>Split two-page spreads</source>
        <translation>拆分双页跨页</translation>
    </message>
    <message>
        <source>Preprocessing:</source>
        <translation>预处理：</translation>
    </message>
    <message>
        <source>Follow the system</source>
        <translation>跟随系统</translation>
    </message>
    <message>
        <source>Light</source>
        <translation>浅色</translation>
    </message>
    <message>
        <source>Dark</source>
        <translation>深色</translation>
    </message>
    <message>
        <source>Theme:</source>
        <translation>主题：</translation>
    </message>
    <message>
        <source>Interface language:</source>
        <translation>界面语言：</translation>
    </message>
    <message>
        <source>Theme and interface language apply the next time Quire starts.</source>
        <translation>主题和界面语言将在下次启动 Quire 时生效。</translation>
    </message>
    <message>
        <source>Installed model: %1</source>
        <translation>已安装的模型：%1</translation>
    </message>
    <message>
        <source>No installed model found</source>
        <translation>未找到已安装的模型</translation>
    </message>
    <message>
        <source>Browse…</source>
        <translation>浏览…</translation>
    </message>
    <message>
        <source>Reader model folder (config.json and model.safetensors)</source>
        <translation>阅读器模型文件夹（config.json 和 model.safetensors）</translation>
    </message>
    <message>
        <source>Reader model:</source>
        <translation>阅读器模型：</translation>
    </message>
    <message>
        <source>Tick the book&apos;s languages, the main one first; greyed ones need their package installed</source>
        <translation>勾选本书的语言，主要语言先选；灰色的语言需先安装其软件包</translation>
    </message>
</context>
<context>
    <name>quire::ui::TranscriptionWorker</name>
    <message>
        <source>Page %1 failed: %2</source>
        <translation>第 %1 页失败：%2</translation>
    </message>
    <message>
        <source>%1 of %2 pages done, %3 flagged, %4 failed</source>
        <translation>已完成 %1/%2 页，%3 页已标记，%4 页失败</translation>
    </message>
</context>
</TS>
